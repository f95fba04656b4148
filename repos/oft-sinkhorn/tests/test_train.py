"""The entry point: artefacts, finite metrics, determinism, DIMACS input, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

from oft_sinkhorn import baselines, data
from oft_sinkhorn.config import PRESETS
from oft_sinkhorn.train import evaluate, train_and_evaluate


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["n"] == tiny.n
    assert {"gap", "residual", "capacity_violation", "optimum", "ortools_seconds"} <= set(metrics)
    assert all(math.isfinite(v) for v in metrics.values())
    assert evaluate(tmp_path / "run") == metrics


def test_same_seed_same_numbers(tiny, tmp_path):
    a, b = (train_and_evaluate(tiny, tmp_path / name) for name in "ab")
    timeless = lambda m: {k: v for k, v in m.items() if "seconds" not in k}
    assert timeless(a) == timeless(b)
    other = train_and_evaluate(dataclasses.replace(tiny, seed=1), tmp_path / "c")
    assert other["optimum"] != a["optimum"]


def test_train_solves_a_dimacs_file(tiny, tmp_path):
    inst = data.netgen_mcf(20, seed=4)
    data.write_dimacs(inst, tmp_path / "g.min")
    metrics = train_and_evaluate(
        dataclasses.replace(tiny, instance=str(tmp_path / "g.min")), tmp_path / "run"
    )
    assert metrics["optimum"] == baselines.ortools_mcf(inst).cost


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    full = dataclasses.replace(PRESETS["full"], device="cpu", n=20, max_iter=1)
    metrics = train_and_evaluate(full, tmp_path)
    assert all(math.isfinite(v) for v in metrics.values())
    assert metrics["iterations"] == len(full.eps)  # one step per eps stage
