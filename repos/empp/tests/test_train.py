"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from empp.config import PRESETS, validate
from empp.train import evaluate, load_split, train_and_evaluate

from .conftest import TINY


@pytest.mark.parametrize(("task", "method"), [("qm9", "empp"), ("md", "empp")])
def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path, task, method):
    cfg = dataclasses.replace(tiny, task=task, method=method)
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["method"] == method
    assert (tmp_path / "run" / "model.safetensors").stat().st_size > 0
    assert {"mae", "pos_error", "centroid_error", "train_mol_per_s"} <= set(metrics)
    assert ("force_mae" in metrics) == (task == "md")
    assert all(math.isfinite(v) for v in metrics.values())
    assert evaluate(tmp_path / "run") == metrics


@pytest.mark.parametrize(
    "method", ["supervised", "denoise", "element_mask", "schnet", "empp_nolabel", "empp_pretrain"]
)
def test_every_arm_runs(tiny, tmp_path, method):
    metrics = train_and_evaluate(dataclasses.replace(tiny, method=method), tmp_path)
    assert math.isfinite(metrics["mae"])


def test_pretraining_pool_is_disjoint_and_head_is_evaluated(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, method="empp_pretrain")
    train, test, _, _, pool = load_split(cfg)
    key = lambda m: m.pos.tobytes()
    assert len(pool) == cfg.n_pretrain
    assert not {key(m) for m in pool} & {key(m) for m in train + test}
    metrics = train_and_evaluate(cfg, tmp_path)
    assert math.isfinite(metrics["pos_error"]) and math.isfinite(metrics["mae"])


def test_same_seed_same_numbers(tiny, tmp_path):
    a = train_and_evaluate(tiny, tmp_path / "a")
    b = train_and_evaluate(tiny, tmp_path / "b")
    a.pop("train_mol_per_s"), b.pop("train_mol_per_s")
    assert a == b
    c = train_and_evaluate(dataclasses.replace(tiny, seed=1), tmp_path / "c")
    assert c["mae"] != a["mae"]


def test_resume_skips_a_finished_run(tiny, tmp_path):
    first = train_and_evaluate(tiny, tmp_path)
    assert train_and_evaluate(dataclasses.replace(tiny, resume=True), tmp_path) == first


def test_training_lowers_the_loss_on_md(tiny, tmp_path):
    """More epochs beat one epoch on the MD-like energies (the loss can fall)."""
    base = dataclasses.replace(tiny, task="md", method="supervised", md_n_train=16, lr=1e-2)
    one = train_and_evaluate(base, tmp_path / "one")["force_mae"]
    many = train_and_evaluate(dataclasses.replace(base, epochs=15), tmp_path / "many")["force_mae"]
    assert many < one


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    small = {k: TINY[k] for k in ("n_train", "n_test", "batch_size", "epochs", "quiet")}
    full = dataclasses.replace(PRESETS["full"], device="cpu", **small)
    validate(full)
    metrics = train_and_evaluate(full, tmp_path)
    assert all(math.isfinite(v) for v in metrics.values())


def test_validate_names_the_bad_field(tiny):
    for field, value, message in [
        ("method", "magic", "method must be one of"),
        ("target", "homo", "target must be one of"),
        ("epochs", 0, "epochs must be >= 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            validate(dataclasses.replace(tiny, **{field: value}))
