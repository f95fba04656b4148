"""Shared fixtures: the quick preset shrunk until a run takes a second or two."""

from __future__ import annotations

import dataclasses
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from gst.config import PRESETS

torch.set_num_threads(1)

TINY = {
    "n_train": 64,
    "n_test": 8,
    "image_codes": 16,
    "camera_codes": 16,
    "width": 16,
    "heads": 2,
    "depth": 1,
    "steps": 3,
    "batch": 4,
    "warmup": 1,
    "cnn_width": 4,
    "perf_batch": 4,
    "pose_candidates": 16,
    "seeds": (0,),
    "quiet": True,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"], out=str(tmp_path / "runs"), results_dir=str(tmp_path / "results"), **TINY
    )
