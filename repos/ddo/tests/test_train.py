"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

from conftest import TINY

from ddo.config import PRESETS
from ddo.train import METHODS, evaluate, train_and_evaluate


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["da_loops"] == tiny.da_loops
    assert (tmp_path / "run" / "samples.npz").exists()
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    assert {k.split("/")[0] for k in metrics} >= set(METHODS)
    assert evaluate(tmp_path / "run") == metrics


def test_same_seed_same_numbers(tiny, tmp_path):
    a = train_and_evaluate(tiny, tmp_path / "a")
    b = train_and_evaluate(tiny, tmp_path / "b")
    time_keys = {k for k in a if "seconds" in k}
    assert {k: v for k, v in a.items() if k not in time_keys} == {
        k: v for k, v in b.items() if k not in time_keys
    }
    c = train_and_evaluate(dataclasses.replace(tiny, seed=7), tmp_path / "c")
    assert c["DDO (exact score)/objective"] != a["DDO (exact score)/objective"]


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    full = dataclasses.replace(PRESETS["full"], device="cpu", out=str(tmp_path), **TINY)
    assert full.hidden == PRESETS["full"].hidden and full.name == "full"
    metrics = train_and_evaluate(full, tmp_path)
    assert math.isfinite(metrics["DDO (exact score)/objective"])
