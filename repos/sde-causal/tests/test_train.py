"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

from conftest import TINY

from sde_causal.config import PRESETS
from sde_causal.train import METHODS, evaluate, train_and_evaluate


def test_smoke_run_is_complete_finite_and_deterministic(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["n_paths"] == tiny.n_paths
    assert evaluate(tmp_path / "run") == metrics
    for m in METHODS:
        for key in ("type1", "power_drift", "power_diffusion"):
            assert 0.0 <= metrics[f"{m}/{key}"] <= 1.0
    assert all(math.isfinite(v) for v in metrics.values())
    assert {"SigKer-CI/shd", "PCMCI/shd", "Granger/shd"} <= set(metrics)
    for m in METHODS:  # irregular-sampling rows
        for key in ("type1", "power_drift", "power_diffusion"):
            assert 0.0 <= metrics[f"{m}/{key}_irregular"] <= 1.0
    assert {"SigKer-CI/shd_hidden", "PCMCI/shd_hidden", "Granger/shd_hidden"} <= set(metrics)
    assert train_and_evaluate(tiny, tmp_path / "again") == metrics


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    full = dataclasses.replace(PRESETS["full"], out=str(tmp_path), **TINY)
    assert full.refinement == PRESETS["full"].refinement == 2 and full.n_obs == 11
    metrics = train_and_evaluate(full, tmp_path)
    assert math.isfinite(metrics["SigKer-CI/shd"])
