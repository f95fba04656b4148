"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from flax import serialization

from leq.config import PRESETS
from leq.train import evaluate, train_and_evaluate


def test_smoke_writes_config_checkpoint_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run", which="LEQ")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["steps"] == tiny.steps
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    assert 0.0 <= metrics["success_rate"] <= 100.0
    # issue 29's diagnostics: blocked moves in the data, model error, imagination in walls
    assert 0.0 < metrics["data_blocked_fraction"] < 1.0
    assert 0.0 <= metrics["imagined_wall_frac_start"] <= 1.0
    assert 0.0 <= metrics["imagined_goal_rate_start"] <= 100.0
    assert metrics["model_holdout_err"] > 0.0 and metrics["model_err_blocked"] > 0.0
    assert 0.0 <= metrics["bc_success_rate"] <= 100.0
    assert evaluate(tmp_path / "run") == metrics
    blob = serialization.msgpack_restore((tmp_path / "run" / "checkpoint.msgpack").read_bytes())
    assert set(blob) == {"actor", "critic"}


def test_same_seed_same_numbers(tiny, tmp_path):
    for method in ("LEQ", "IQL"):
        a = train_and_evaluate(tiny, tmp_path / f"a{method}", which=method)
        b = train_and_evaluate(tiny, tmp_path / f"b{method}", which=method)
        assert a == b


@pytest.mark.slow
def test_pendulum_and_ablations_run(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, env="pendulum", n_transitions=1000)
    m = train_and_evaluate(cfg, tmp_path / "p", which="LEQ-onestep")
    assert math.isfinite(m["normalized_return"])
    m = train_and_evaluate(tiny, tmp_path / "t", which="LEQ-tau0.5")
    assert math.isfinite(m["success_rate"])


@pytest.mark.slow
def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    """The full preset's structure (H = 10, 7 members / 5 elites, large maze) at tiny widths."""
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", quiet=True, n_transitions=2000, episode_len=50,
        eval_episodes=4, hidden=8, layers=1, model_hidden=8, model_layers=1, model_steps=100,
        bc_steps=1, steps=1, batch=8, rollout_every=1, rollout_states=16,
    )  # fmt: skip
    assert full.horizon == 10 and full.env == "large"
    metrics = train_and_evaluate(full, tmp_path, which="LEQ")
    assert math.isfinite(metrics["success_rate"])
