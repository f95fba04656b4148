"""Shared fixtures: the quick preset shrunk until a run takes a few seconds."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from ddo.config import PRESETS

torch.set_num_threads(1)

# every size field of the quick preset, shrunk (tests/skeleton.toml's [readme.shrink] repeats it)
TINY = {
    "da_loops": 2, "n_ref": 256, "fit_steps": 20, "n_eval": 200, "sde_steps": 10, "mc_draws": 8,
    "learned_samples": 20, "learned_sde_steps": 4, "inner_steps": 2, "dsm_steps": 20, "batch": 64,
    "langevin_steps": 5, "ir_pool": 500, "grid_step": 0.4, "image_train_steps": 2,
    "image_batch": 4, "image_ref": 8, "image_samples": 4, "image_sde_steps": 2,
    "image_inner_steps": 2, "image_mc_draws": 2, "image_dpo_steps": 2, "grid_da_loops": 3,
}  # fmt: skip
# the tuning grids, shrunk
GRIDS = {"fit_lrs": (0.01,), "ddpo_betas": (100.0, 1000.0)}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        **TINY,
        **GRIDS,
        seeds=(0, 1),
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        quiet=True,
    )
