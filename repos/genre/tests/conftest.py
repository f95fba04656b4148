"""Shared fixtures: the quick preset on two-moons, shrunk until a run takes a few seconds."""

from __future__ import annotations

import dataclasses

import pytest

from genre.config import PRESETS

TINY = {
    "dataset": "moons", "rf_trees": 10, "clf_epochs": 40, "epochs": 2,
    "n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 16, "n_bins": 20, "top_k": 20,
    "n_negatives": 10, "best_k": 3, "dice_negatives": 2, "vae_epochs": 2, "seeds": (0,),
    "bench_datasets": ("moons",), "quiet": True, "n_val_negatives": 10, "n_timing": 1,
    "sweep_temperatures": (3.0, 10.0), "sweep_lams": (2.0, 5.0), "sweep_retrain_lams": (),
    "n_boot": 100,
}  # fmt: skip


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"], out=str(tmp_path / "runs"), results_dir=str(tmp_path / "results"), **TINY
    )
