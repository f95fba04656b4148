"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from conftest import GRIDS, TINY
from ddo.config import PRESETS, validate
from ddo.train import METHODS, MODELS, evaluate, optimum, train_and_evaluate


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["da_loops"] == tiny.da_loops
    assert (tmp_path / "run" / "samples.npz").exists()
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    methods = {k.split("/")[0] for k in metrics}
    assert methods >= set(METHODS) and "Hard tilt: ULA from its target" in methods
    assert {"Grid DA (linear c_k)", "Grid DA (constant c_k)"} <= methods
    assert (tmp_path / "run" / "samples_hard.npz").exists()
    # eval reloads the saved models: what follows from f_K alone comes out exactly the same,
    # the fresh samples are scored under the same keys
    again = evaluate(dataclasses.replace(PRESETS["quick"], quiet=True), tmp_path / "run")
    exact = ["DDO (exact score)/tv_modes_target_to_q_hat"] + [
        f"{p}DDO (exact score)/objective_loop{tiny.da_loops}" for p in ("", "Hard tilt: ")
    ]
    assert {k: again[k] for k in exact} == pytest.approx({k: metrics[k] for k in exact})
    assert set(again) <= set(metrics) and all(math.isfinite(v) for v in again.values())
    assert {k.split("/")[0] for k in again} >= {"DDO (learned score)", "Diffusion-DPO"}
    (tmp_path / "run" / MODELS).write_bytes(b"\x00garbage")
    with pytest.raises(ValueError, match=MODELS):
        evaluate(tiny, tmp_path / "run")


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
    """The full config (2-D problem and the UNet image experiment), every count shrunk."""
    full = dataclasses.replace(PRESETS["full"], device="cpu", out=str(tmp_path), **TINY, **GRIDS)
    assert full.hidden == PRESETS["full"].hidden and full.name == "full" and full.images
    assert full.image_channels == PRESETS["full"].image_channels == (32, 64)
    metrics = train_and_evaluate(full, tmp_path)
    assert math.isfinite(metrics["DDO (exact score)/objective"])
    for method in ("DDO", "Reference", "Importance resampling", "Diffusion-DPO"):
        assert math.isfinite(metrics[f"Images: {method}/colour_distance"])
    low, high = (
        metrics[f"Images: DDO/colour_distance_minus_reference_{s}"] for s in ("low", "high")
    )
    assert low <= metrics["Images: DDO/colour_distance_minus_reference"] <= high
    images = np.load(tmp_path / "images.npz")
    assert images["DDO"].shape == (TINY["image_samples"], 3, 16, 16)


def test_grid_optimum_is_solved_once_for_all_seeds(tiny):
    """q_hat does not depend on the seed: the benchmark's seeds share one L-BFGS solve."""
    first = optimum(dataclasses.replace(tiny, seed=1))
    assert optimum(dataclasses.replace(tiny, seed=2, out="elsewhere")) is first
    assert optimum(dataclasses.replace(tiny, beta=2.0)) is not first


def test_full_preset_aligns_a_local_pipeline_with_a_preference_file(tmp_path):
    """The full preset's image experiment on a user's assets: a saved diffusers DDPMPipeline
    (tiny, random) and an .npz of preference pairs, end to end on the CPU."""
    from test_pipeline import SIZE, tiny_pipeline

    from ddo.images import colour_reward, coloured_shapes

    g = torch.Generator().manual_seed(0)
    a, b = coloured_shapes(20, SIZE, g), coloured_shapes(20, SIZE, g)
    a_wins = (colour_reward(a.reshape(20, -1)) > colour_reward(b.reshape(20, -1)))[:, None, None]
    np.savez(tmp_path / "prefs.npz", winners=torch.where(a_wins[..., None], a, b).numpy(),
             losers=torch.where(a_wins[..., None], b, a).numpy())  # fmt: skip
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", out=str(tmp_path), **TINY, **GRIDS, image_size=SIZE,
        image_pipeline=str(tiny_pipeline(tmp_path / "pipe")),
        image_preferences=str(tmp_path / "prefs.npz"),
    )  # fmt: skip
    metrics = train_and_evaluate(validate(full), tmp_path)
    assert 0 <= metrics["Images: Reward model/ranking_accuracy"] <= 1
    for key in ("ranking_accuracy", "ranking_accuracy_pixels_potential",
                "ranking_accuracy_random_labels"):  # fmt: skip
        assert 0 <= metrics[f"Images: DDO/{key}"] <= 1
    assert math.isfinite(metrics["Images: Diffusion-DPO/reward"])
    assert np.load(tmp_path / "images.npz")["DDO"].shape == (TINY["image_samples"], 3, SIZE, SIZE)
    with pytest.raises(ValueError, match="image_preferences: .*missing.npz does not exist"):
        validate(dataclasses.replace(full, image_preferences=str(tmp_path / "missing.npz")))
