"""Shared fixtures: the quick preset shrunk until a run takes about a second."""

from __future__ import annotations

import dataclasses
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch

from empp.config import PRESETS

torch.set_num_threads(1)

TINY = {
    "n_train": 8,
    "n_test": 4,
    "md_n_train": 6,
    "md_n_test": 3,
    "n_pretrain": 4,
    "pretrain_epochs": 1,
    "epochs": 1,
    "batch_size": 4,
    "seeds": (0,),
    "irreps_hidden": "8x0e+2x1o+2x2e",
    "num_layers": 1,
    "head_channels": 4,
    "grid_beta": 6,
    "grid_alpha": 7,
    "num_radius_bins": 16,
    "quiet": True,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"], out=str(tmp_path / "runs"), results_dir=str(tmp_path / "results"), **TINY
    )


@pytest.fixture(autouse=True)
def fixed_torch_seed():
    """Tests that draw random inputs draw the same ones every run."""
    torch.manual_seed(0)
