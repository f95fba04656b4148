"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from tpo.config import PRESETS
from tpo.train import evaluate, train_and_evaluate

from .conftest import TINY


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["sft_steps"] == tiny.sft_steps
    assert (tmp_path / "run" / "sft.safetensors").exists()
    assert (tmp_path / "run" / "policy.safetensors").exists()
    assert metrics and all(math.isfinite(v) for v in metrics.values())


def test_eval_reloads_the_saved_policy_and_measures_it_again(tiny, tmp_path):
    """eval rebuilds the stage from config.json and sft.safetensors, loads policy.safetensors and
    gives train's numbers again; a damaged or missing checkpoint is named."""
    run = tmp_path / "run"
    metrics = train_and_evaluate(dataclasses.replace(tiny, pref_steps=6, pref_lr=1e-2), run)
    assert evaluate(dataclasses.replace(PRESETS["quick"], quiet=True), run) == metrics
    policy = run / "policy.safetensors"
    policy.write_bytes(policy.read_bytes()[:40])
    with pytest.raises(ValueError, match=f"^{policy}: corrupt checkpoint"):
        evaluate(tiny, run)
    (run / "sft.safetensors").unlink()
    with pytest.raises(ValueError, match="sft.safetensors: no such checkpoint"):
        evaluate(tiny, run)


def test_curve_every_records_validation_accuracy_without_changing_the_run(tiny, tmp_path):
    plain = train_and_evaluate(dataclasses.replace(tiny, pref_steps=4), tmp_path / "a")
    traced = train_and_evaluate(
        dataclasses.replace(tiny, pref_steps=4, curve_every=2), tmp_path / "b"
    )
    assert traced == plain
    curve = json.loads((tmp_path / "b" / "curve.json").read_text())["val_acc"]
    assert [step for step, _ in curve] == [2, 4] and all(0 <= acc <= 1 for _, acc in curve)


def test_same_seed_same_numbers(tiny, tmp_path):
    assert train_and_evaluate(tiny, tmp_path / "a") == train_and_evaluate(tiny, tmp_path / "b")


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    small = {k: v for k, v in TINY.items() if k not in ("modulus", "n_layer", "d_model", "n_head")}
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", **{**small, "sft_steps": 1, "pref_steps": 1}
    )
    metrics = train_and_evaluate(full, tmp_path)
    assert all(math.isfinite(v) for v in metrics.values())


def test_resume_reuses_the_sft_checkpoint(tiny, tmp_path):
    first = train_and_evaluate(tiny, tmp_path)
    again = train_and_evaluate(dataclasses.replace(tiny, resume=True, sft_steps=1), tmp_path)
    assert again == first  # sft_steps changed, but the saved SFT policy was reused
