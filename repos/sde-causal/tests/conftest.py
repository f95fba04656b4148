"""Shared fixtures: the quick preset shrunk until a whole run takes a few seconds."""

from __future__ import annotations

import dataclasses

import pytest

from sde_causal.config import PRESETS

TINY = {
    "n_paths": 24,
    "fine_steps": 100,
    "n_obs": 11,
    "n_perm": 19,
    "null_reps": 1,
    "power_reps": 1,
    "n_graphs": 1,
    "irregular_reps": 1,
    "seeds": (0,),
    "pysiglib_sizes": (8,),
    "quiet": True,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"], out=str(tmp_path / "runs"), results_dir=str(tmp_path / "results"), **TINY
    )
