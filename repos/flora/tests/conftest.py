"""Shared fixtures: the quick preset shrunk until a run takes a few seconds."""

from __future__ import annotations

import dataclasses
import os
import warnings

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore", module="peft")

from flora.config import PRESETS

SHRINK = {
    "struct_channels": 8,
    "teacher_tucker_ranks": (2, 2, 3, 3),
    "teacher_matrix_rank": 2,
    "struct_levels": (1, 2),
    "struct_steps": 5,
    "struct_batch": 8,
    "threads": 1,
    "pretrain_epochs": 1,
    "epochs": 1,
    "seeds": (0,),
    "lr_grid": (3e-3,),
    "scale_grid": (1.0,),
    "quiet": True,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        **SHRINK,
    )
