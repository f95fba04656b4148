"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import torch
from conftest import TINY

from trendy import data
from trendy.config import PRESETS
from trendy.train import evaluate, train_and_evaluate


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["epochs"] == tiny.epochs
    assert {"test_mse", "sindycp_test_mse", "accuracy", "hopf_rel_err"} <= set(metrics)
    assert all(math.isfinite(metrics[k]) for k in ("test_mse", "sindycp_test_mse", "accuracy"))
    assert evaluate(tmp_path / "run") == metrics


def test_same_seed_same_numbers(tiny, tmp_path):
    assert train_and_evaluate(tiny, tmp_path / "a") == train_and_evaluate(tiny, tmp_path / "b")


def test_held_out_bands_never_reach_training(tiny):
    ds = data.make_dataset(dataclasses.replace(tiny, n_train=40, n_test=20))
    assert not data.in_band(ds["theta_train"], tiny).any()
    assert data.in_band(ds["theta_test"], tiny).all()
    again = data.make_dataset(dataclasses.replace(tiny, n_train=40, n_test=20))
    assert torch.equal(ds["train"], again["train"])


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", quiet=True, **TINY, grid=16, dx=2.0, dt=0.025
    )
    assert PRESETS["full"].grid == 64 and PRESETS["full"].n_train == 2000
    assert math.isfinite(train_and_evaluate(full, tmp_path)["test_mse"])


def test_patches_hide_the_requested_fraction():
    fields = torch.ones(2, 3, 2, 16, 16)
    hidden = data.add_patches(fields, 0.25, torch.Generator().manual_seed(0))
    assert torch.equal((hidden == 0).float().mean((-1, -2)), torch.full((2, 3, 2), 0.25))
