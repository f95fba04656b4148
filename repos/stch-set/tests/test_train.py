"""Entry point: artefacts, finite metrics, determinism, the schedule-free swap, full preset tiny."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import schedulefree
import torch

from stch_set.config import PRESETS
from stch_set.train import averaged_weights, evaluate, train_and_evaluate


@pytest.mark.parametrize("method", ["stch-set", "tch-set", "som", "stch", "tch", "ls", "nsga3"])
def test_smoke_every_method_writes_config_and_finite_metrics(tiny, tmp_path, method):
    cfg = dataclasses.replace(tiny, method=method)
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["method"] == method
    assert set(metrics) == {"worst", "average", "seconds"}
    assert all(math.isfinite(v) for v in metrics.values())
    assert 0 <= metrics["average"] <= metrics["worst"]
    assert evaluate(tmp_path / "run") == metrics


@pytest.mark.parametrize("problem", ["linear", "nonlinear"])
def test_same_seed_same_numbers(tiny, tmp_path, problem):
    cfg = dataclasses.replace(tiny, problem=problem)
    a, b = train_and_evaluate(cfg, tmp_path / "a"), train_and_evaluate(cfg, tmp_path / "b")
    assert (a["worst"], a["average"]) == (b["worst"], b["average"])
    c = train_and_evaluate(dataclasses.replace(cfg, seed=1), tmp_path / "c")
    assert c["worst"] != a["worst"]


def test_schedule_free_evaluates_at_averaged_weights():
    x = torch.nn.Parameter(torch.tensor([3.0, -1.0]))
    opt = schedulefree.SGDScheduleFree([x], lr=0.1)
    opt.train()
    for _ in range(5):
        opt.zero_grad()
        (x**2).sum().backward()
        opt.step()
    train_point = x.detach().clone()
    with averaged_weights(opt):
        averaged = x.detach().clone()
    assert not torch.allclose(train_point, averaged)
    assert torch.equal(x.detach(), train_point)  # swapped back for further training


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", problem="deep", m=6, k=2, n_dim=3, steps=1, quiet=True
    )
    metrics = train_and_evaluate(full, tmp_path)
    assert math.isfinite(metrics["worst"])
    assert json.loads((tmp_path / "config.json").read_text())["k_sweep"] == [3, 5, 8, 10]
