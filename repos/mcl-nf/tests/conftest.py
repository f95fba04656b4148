"""Shared fixtures: the quick preset shrunk until a whole run takes a few seconds."""

from __future__ import annotations

import dataclasses

import pytest

from mcl_nf.config import PRESETS

TINY = {
    "image_size": 8,
    "audio_length": 32,
    "video_frames": 4,
    "nerf_resolution": 4,
    "nerf_views": 1,
    "nerf_test_views": 1,
    "nerf_samples": 8,
    "nerf_rays": 4,
    "grid": 2,
    "hidden": 8,
    "single_hidden": 16,
    "inner_steps": 1,
    "meta_steps": 2,
    "meta_batch": 2,
    "n_test": 2,
    "eval_steps": (1, 2),
    "seeds": (0,),
    "quiet": True,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"], **TINY, out=str(tmp_path / "runs"), results_dir=str(tmp_path / "results")
    )
