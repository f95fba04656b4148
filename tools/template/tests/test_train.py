"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

from __package__.config import PRESETS
from __package__.train import evaluate, train_and_evaluate


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["steps"] == tiny.steps
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    assert evaluate(tiny, tmp_path / "run") == metrics  # reloaded weights, same numbers


def test_same_seed_same_numbers(tiny, tmp_path):
    assert train_and_evaluate(tiny, tmp_path / "a") == train_and_evaluate(tiny, tmp_path / "b")


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    full = dataclasses.replace(PRESETS["full"], device="cpu", n_samples=16, dim=4, steps=1)
    assert math.isfinite(train_and_evaluate(full, tmp_path)["train_mse"])
