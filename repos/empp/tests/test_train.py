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
    # eval reloads model.safetensors and evaluates it again on the run's own test split
    again = evaluate(dataclasses.replace(PRESETS["quick"], quiet=True), tmp_path / "run")
    del metrics["train_mol_per_s"]
    assert again == pytest.approx(metrics)
    (tmp_path / "run" / "model.safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(ValueError, match="model.safetensors"):
        evaluate(cfg, tmp_path / "run")


@pytest.mark.parametrize(
    "method", ["supervised", "denoise", "element_mask", "schnet", "empp_nolabel", "empp_pretrain"]
)
def test_every_arm_runs(tiny, tmp_path, method):
    metrics = train_and_evaluate(dataclasses.replace(tiny, method=method), tmp_path)
    assert math.isfinite(metrics["mae"])


def test_pretraining_pool_is_disjoint_and_head_is_evaluated(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, method="empp_pretrain")
    train, _, test, _, _, pool = load_split(cfg)
    key = lambda m: m.pos.tobytes()
    assert len(pool) == cfg.n_pretrain
    assert not {key(m) for m in pool} & {key(m) for m in train + test}
    metrics = train_and_evaluate(cfg, tmp_path)
    assert math.isfinite(metrics["pos_error"]) and math.isfinite(metrics["mae"])


def test_same_seed_same_numbers(tiny, tmp_path):
    a = train_and_evaluate(tiny, tmp_path / "a")
    b = train_and_evaluate(tiny, tmp_path / "b")
    a.pop("train_mol_per_s"), b.pop("train_mol_per_s")
    assert a["params"] > 0
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
    """The full preset is the paper's QM9 setting (real QM9, its split sizes, Equiformer width,
    the paper's head); here one step of it on CPU with a handful of molecules."""
    paper = PRESETS["full"]
    assert paper.qm9_csv == "qm9pack" and (paper.n_train, paper.n_test) == (110000, 10831)
    assert (paper.grid_beta, paper.grid_alpha, paper.head_channels) == (100, 101, 32)
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


def test_qm9_csv_split_is_fixed_and_disjoint(tiny, tmp_path):
    """The qm9pack-layout data give one train/val/test/pool split whatever the seed."""
    from empp import data

    mols = data.qm9_like(20, max_heavy=6, hydrogens=True)
    path = tmp_path / "qm9.csv"
    data.write_qm9_csv(path, mols)
    cfg = dataclasses.replace(tiny, qm9_csv=str(path), n_train=8, n_val=3, n_test=4, n_pretrain=5)
    key = lambda m: m.pos.tobytes()
    parts = load_split(cfg)
    again = load_split(dataclasses.replace(cfg, seed=7))
    for a, b in zip(parts, again):
        assert a == b if isinstance(a, str) else [key(m) for m in a] == [key(m) for m in b]
    sets = [{key(m) for m in parts[i]} for i in (0, 1, 2, 5)]
    assert [len(x) for x in sets] == [8, 3, 4, 5]
    assert len(set().union(*sets)) == 20
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert math.isfinite(metrics["val_mae"]) and math.isfinite(metrics["mae"])


def test_paper_preset_reads_the_installed_qm9pack_tables():
    """The paper preset is real QM9 with equal lr tuning; its data ship in the pinned wheel."""
    from empp import data

    paper = validate(PRESETS["paper"])
    assert paper.qm9_csv == "qm9pack" and paper.tasks == ("qm9",) and len(paper.lr_grid) >= 2
    assert paper.n_val > 0 and len(paper.seeds) >= 3
    assert len(sorted(data.qm9pack_folder().glob("qm9_part*.csv"))) == 3


def test_no_test_molecule_reaches_standardisation_or_pretraining(tiny, tmp_path, monkeypatch):
    """Label standardisation uses the training labels only (mean and std), and EMPP
    pre-training sees the unlabelled pool and the training geometries, never test or val."""
    import numpy as np

    from empp import train as train_mod

    seen: dict = {}
    real_norm, real_pre = train_mod.normaliser, train_mod.pretrain

    def spy_norm(mols, key):
        out = real_norm(mols, key)
        seen.setdefault("norm", (mols, out))
        return out

    def spy_pre(net, aux, cfg, mols, *args):
        seen["pre"] = list(mols)
        return real_pre(net, aux, cfg, mols, *args)

    monkeypatch.setattr(train_mod, "normaliser", spy_norm)
    monkeypatch.setattr(train_mod, "pretrain", spy_pre)
    cfg = dataclasses.replace(tiny, method="empp_pretrain", n_val=2)
    train, val, test, key, _, pool = load_split(cfg)
    train_and_evaluate(cfg, tmp_path)
    ids = lambda ms: {m.pos.tobytes() for m in ms}
    used, (_, mean, std) = seen["norm"]
    assert ids(used) == ids(train)
    labels = np.array([m.y[key] for m in train])
    assert mean == pytest.approx(labels.mean()) and std == pytest.approx(labels.std(), rel=1e-6)
    assert ids(seen["pre"]) == ids(pool) | ids(train)
    assert not ids(seen["pre"]) & ids(test + val)


def test_full_preset_md_part_reads_an_md17_folder(tmp_path):
    """The full preset's MD part is the paper's MD17 setting: an rMD17 file of md_molecule
    (aspirin) from a folder, energy + forces, the paper's EMPP head, one step on CPU."""
    import numpy as np

    from empp import data

    frames = data.md_like("aspirin", 6, stride=2)
    folder = tmp_path / "md17"
    folder.mkdir()
    np.savez(
        folder / "rmd17_aspirin.npz",
        nuclear_charges=frames[0].z,
        coords=np.stack([f.pos for f in frames]),
        energies=np.array([f.y["energy"] for f in frames]),
        forces=np.stack([f.forces for f in frames]),
    )
    full = dataclasses.replace(
        PRESETS["full"],
        device="cpu",
        task="md",
        method="empp",
        md17_npz=str(folder),
        md_n_train=4,
        md_n_test=2,
        batch_size=2,
        epochs=1,
        quiet=True,
    )
    metrics = train_and_evaluate(validate(full), tmp_path / "run")
    assert math.isfinite(metrics["force_mae"]) and math.isfinite(metrics["pos_error"])
