"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import torch
from conftest import TINY

from trendy import data, pde
from trendy.config import PRESETS, gray_scott_config
from trendy.train import evaluate, train_and_evaluate


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["epochs"] == tiny.epochs
    assert {"test_mse", "test_nmse", "sindycp_test_mse", "accuracy", "hopf_rel_err"} <= set(metrics)
    keys = ("test_mse", "test_nmse", "sindycp_test_mse", "sindycp_test_nmse", "accuracy")
    assert all(math.isfinite(metrics[k]) for k in keys)
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


def test_quick_preset_follows_the_cpu_plan_of_the_brief():
    quick = PRESETS["quick"]
    assert (quick.epochs, quick.lr, quick.hidden, quick.depth) == (300, 1e-3, 64, 4)
    assert (quick.scattering_j, quick.scattering_l, quick.diffusion) == (2, 8, (1.0, 8.0))


def test_patches_hide_the_requested_fraction():
    fields = torch.ones(2, 3, 2, 16, 16)
    hidden = data.add_patches(fields, 0.25, torch.Generator().manual_seed(0))
    assert torch.equal((hidden == 0).float().mean((-1, -2)), torch.full((2, 3, 2), 0.25))


def test_regime_labels_come_from_what_the_simulation_shows():
    frames = torch.linspace(0, 1, 9)
    flat = torch.full((9, 2, 8, 8), 2.0)
    pattern = flat.clone()
    pattern[:, 0, ::2] += 0.5 * frames[:, None, None]  # stripes that grow
    wobble = flat + 0.5 * torch.sin(6 * torch.pi * frames)[:, None, None, None]
    labels = data.simulated_regime(torch.stack([flat, pattern, wobble]), 0.1)
    assert labels.tolist() == [0, 1, 2]


def test_above_the_hopf_line_the_simulated_state_is_a_stationary_pattern(tiny):
    """Audit of the quick design (D_v/D_u = 8): the Turing pattern outgrows the Hopf oscillation,
    so the closed-form 'oscillation' regime never shows in a trajectory; labels follow the data."""
    cfg = dataclasses.replace(tiny, t_end=50.0, n_frames=41)
    theta = torch.tensor(
        [[2.0, pde.hopf_line(2.0) + 0.2], [2.0, pde.turing_line(2.0, cfg.diffusion) - 0.2]]
    )
    traj = data.simulate_batch(cfg, theta, torch.Generator().manual_seed(0))
    assert [pde.regime(a, b, cfg.diffusion) for a, b in theta.tolist()] == [2, 0]
    assert data.simulated_regime(traj, cfg.init_noise).tolist() == [1, 0]


def test_full_preset_gray_scott_study_runs_one_step_at_tiny_size(tmp_path):
    assert PRESETS["full"].gray_scott_study
    gs = gray_scott_config(PRESETS["full"])
    assert gs.system == "gray-scott" and gs.t_end == 4000.0 and gs.grid == 64
    tiny = dataclasses.replace(gs, device="cpu", quiet=True, **(TINY | {"grid": 16, "t_end": 8.0}))
    metrics = train_and_evaluate(tiny, tmp_path)
    assert math.isfinite(metrics["test_mse"]) and math.isfinite(metrics["sindycp_test_mse"])
    assert "accuracy" not in metrics


def test_bench_seed_with_the_gray_scott_study_reports_both_systems(tiny):
    from trendy.bench import run_seed

    runs = run_seed(dataclasses.replace(tiny, gray_scott_study=True), 0)
    assert {"TRENDy", "SINDyCP", "TRENDy-GrayScott", "SINDyCP-GrayScott"} <= set(runs)
    assert "accuracy" in runs["TRENDy"] and "accuracy" not in runs["TRENDy-GrayScott"]
    assert all(math.isfinite(v) for v in runs["SINDyCP-GrayScott"].values())
