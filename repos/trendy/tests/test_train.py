"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from conftest import TINY
from trendy import data, node, pde
from trendy.config import PRESETS, gray_scott_config, hopf_config
from trendy.train import evaluate, train_and_evaluate


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["epochs"] == tiny.epochs
    want = {"test_nmse", "sindycp_test_nmse", "untrained_test_nmse", "persistence_test_nmse"}
    assert want | {"accuracy", "turing_rel_err", "turing_jacobian_rel_err"} <= set(metrics)
    assert all(math.isfinite(metrics[k]) for k in want | {"accuracy", "turing_rel_err"})
    again = evaluate(tiny, tmp_path / "run")  # the saved model, reloaded, on re-derived data
    assert {k: again[k] for k in ("test_mse", "test_nmse", "persistence_test_nmse")} == {
        k: metrics[k] for k in ("test_mse", "test_nmse", "persistence_test_nmse")
    }
    tuning = json.loads((tmp_path / "run" / "tuning.json").read_text())
    assert set(tuning["TRENDy"]) == {f"lr={lr:g}" for lr in tiny.tune_lr}
    assert len(tuning["SINDyCP"]) == len(tiny.tune_sindy_threshold) * len(
        tiny.tune_sindy_components
    )
    assert "turing" in json.loads((tmp_path / "run" / "bifurcations.json").read_text())


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
        PRESETS["full"], device="cpu", quiet=True, **TINY, grid=16, dx=2.0, dt=0.0125
    )
    assert PRESETS["full"].grid == 64 and PRESETS["full"].n_train == 2000
    assert math.isfinite(train_and_evaluate(full, tmp_path)["test_mse"])


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
    cfg = dataclasses.replace(tiny, t_end=50.0, n_frames=41, init_spread=0.0)
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
    from trendy.bench import Collector, run_seed

    col = Collector()
    run_seed(dataclasses.replace(tiny, gray_scott_study=True, hopf_sweep_a=(1.5,)), 0, col)
    runs = col.scalars
    assert {"TRENDy", "SINDyCP", "TRENDy-GrayScott", "SINDyCP-GrayScott"} <= set(runs)
    assert "accuracy" in runs["TRENDy"] and "accuracy" not in runs["TRENDy-GrayScott"]
    assert all(math.isfinite(v[0]) for v in runs["SINDyCP-GrayScott"].values())
    assert {"Hopf/TRENDy-mean", "Hopf/TRENDy-mean-shuffled-theta", "oracle-PDE"} <= set(runs)


def test_hopf_setting_run_reads_the_hopf_line_only(tiny, tmp_path):
    cfg = dataclasses.replace(hopf_config(tiny), hopf_steps=8, n_frames=9, euler_steps=8)
    cfg = dataclasses.replace(cfg, t_end=8.0)
    assert cfg.diffusion == (0.1, 0.2) and cfg.measurement == "mean" and cfg.bands == ("hopf",)
    metrics = train_and_evaluate(cfg, tmp_path)
    assert "hopf_rel_err" in metrics and "turing_rel_err" not in metrics
    ds = data.make_dataset(cfg)
    assert (
        data.in_band(ds["theta_test"], cfg).all() and not data.in_band(ds["theta_train"], cfg).any()
    )
    # random homogeneous initial levels around (A, B/A), not the equilibrium itself
    level = ds["train"][:, 0, 0].mean((-1, -2)) / ds["theta_train"][:, 0]
    assert float(level.std()) > 0.1


def test_in_the_hopf_setting_draws_above_the_hopf_line_oscillate(tiny):
    """The issue's point 1: the data must hold real Hopf oscillations (D = (0.1, 0.2))."""
    cfg = dataclasses.replace(hopf_config(tiny), init_spread=0.0)
    theta = torch.tensor([[1.5, pde.hopf_line(1.5) + 0.5], [1.5, pde.hopf_line(1.5) - 0.5]])
    traj = data.simulate_batch(cfg, theta, torch.Generator().manual_seed(0))
    swing = traj[:, -cfg.n_frames // 3 :, 0].mean((-1, -2)).std(1)
    assert float(swing[0]) > 0.2 and float(swing[1]) < 1e-3


def test_shuffled_parameters_control_changes_only_the_parameters(tiny):
    from trendy.train import evaluate_run

    ds = data.make_dataset(tiny)
    plain = evaluate_run(tiny, ds)
    shuffled = evaluate_run(dataclasses.replace(tiny, shuffle_theta=True), ds)
    assert plain.metrics["persistence_test_nmse"] == shuffled.metrics["persistence_test_nmse"]
    assert plain.metrics["test_nmse"] != shuffled.metrics["test_nmse"]


def test_paper_preset_runs_one_step_at_tiny_size(tmp_path):
    paper = PRESETS["paper"]
    assert paper.name == "paper" and paper.grid == 32 and len(paper.seeds) >= 3
    small = dataclasses.replace(paper, quiet=True, **TINY, grid=16, dx=2.0)
    assert math.isfinite(train_and_evaluate(small, tmp_path)["test_nmse"])


@pytest.mark.slow
def test_bench_numbers_do_not_depend_on_the_number_of_workers(tiny):
    from trendy.bench import run_bench

    docs = [
        run_bench(dataclasses.replace(tiny, workers=w, results_dir=f"{tiny.results_dir}{w}"))
        for w in (1, 2)
    ]
    strip = [
        {
            m: {k: v["values"] for k, v in d.items()}
            for m, d in doc["metrics"].items()
            if m != "timing"
        }
        for doc in docs
    ]
    assert strip[0] == strip[1]
    assert [c["ours"] for c in docs[0]["claims"]] == [c["ours"] for c in docs[1]["claims"]]


def snapshots(cfg, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """A small loaded-data set (no simulation, no bifurcation sweeps): noise fields that grow."""
    growth = torch.linspace(1, 2, cfg.n_frames)[None, :, None, None, None]
    return {
        "train": torch.randn(8, cfg.n_frames, 2, 8, 8, generator=gen) * growth,
        "test": torch.randn(4, cfg.n_frames, 2, 8, 8, generator=gen) * growth,
        "theta_train": torch.rand(8, 2, generator=gen),
        "theta_test": torch.rand(4, 2, generator=gen),
    }


def loaded(tiny, **change):
    return dataclasses.replace(
        tiny, data="snapshots", sindycp=False, tune_lr=(), epochs=0, **change
    )


def test_pca_is_fitted_on_the_training_split_only(tiny):
    """The frozen reducer (standardisation and PCA) is fitted on the training trajectories only:
    other test fields leave it unchanged, while other training fields change it."""
    from trendy.train import evaluate_run

    cfg = loaded(tiny, measurement="fourier")
    ds = snapshots(cfg, torch.Generator().manual_seed(0))
    other_test = ds | {"test": 3.0 * ds["test"] + 1.0}
    other_train = ds | {"train": 3.0 * ds["train"] + 1.0}

    def arrays(dataset):
        reducer = evaluate_run(cfg, dict(dataset)).reducer
        return [getattr(reducer, k) for k in node.Reducer.STATE]

    base = arrays(ds)
    assert all(np.array_equal(a, b) for a, b in zip(base, arrays(other_test), strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(base, arrays(other_train), strict=True))


def test_mean_trajectory_floor_is_the_training_mean(tiny):
    """On test fields shifted away from training, the training-mean floor is worse than each
    coordinate's own test mean (nMSE > 1); a floor that peeked at the test set could not be."""
    from trendy.train import evaluate_run

    cfg = loaded(tiny, measurement="mean", n_components=2)
    ds = snapshots(cfg, torch.Generator().manual_seed(0))
    ds["test"] = ds["test"] + 3.0
    metrics = evaluate_run(cfg, ds).metrics
    assert metrics["mean_trajectory_test_nmse"] > 1.0


def test_validation_split_holds_out_val_fraction_and_fits_on_the_rest(tiny):
    from trendy.train import validation_split

    fit, val = validation_split(tiny, 12)  # val_fraction 0.25
    assert len(val) == 3 and len(fit) == 9
    assert sorted(torch.cat([fit, val]).tolist()) == list(range(12))
    again = validation_split(tiny, 12)
    assert torch.equal(again[0], fit) and torch.equal(again[1], val)
