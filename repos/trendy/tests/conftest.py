"""Shared fixtures: the quick preset shrunk until a run takes a few seconds."""

from __future__ import annotations

import dataclasses

import pytest

from trendy.config import PRESETS

TINY = {
    "n_train": 12,
    "n_test": 6,
    "epochs": 3,
    "sweep_points": 5,
    "sweep_a": (2.0,),
    "t_end": 10.0,
    "n_frames": 5,
    "euler_steps": 8,
    "n_components": 3,
    "scattering_l": 4,
    "sweep_repeats": 2,
    "hopf_sweep_a": (1.5,),
    "hopf_steps": 8,
    "hopf_seeds": (0,),  # no extra Hopf-only seed: 0 is already among the seeds
    "workers": 1,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        **TINY,
        seeds=(0,),
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        quiet=True,
    )
