"""Shared fixtures: the quick preset shrunk until a whole pipeline takes a few seconds."""

from __future__ import annotations

import dataclasses
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tpo.config import PRESETS

TINY = {
    "modulus": 5,
    "n_layer": 1,
    "d_model": 16,
    "n_head": 2,
    "sft_examples": 64,
    "sft_steps": 3,
    "sft_batch": 8,
    "n_trees": 8,
    "n_heldout_trees": 4,
    "n_branches": 2,
    "pref_steps": 2,
    "pref_batch": 4,
    "n_eval": 8,
    "n_val": 8,
    "n_boot": 50,
    "seeds": (0,),
    "perf_repeats": 0,
    "quiet": True,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"], out=str(tmp_path / "runs"), results_dir=str(tmp_path / "results"), **TINY
    )
