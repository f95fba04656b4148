"""Shared fixtures: the quick preset shrunk until a whole pipeline takes a few seconds."""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

from arith_heuristics.config import PRESETS

TINY = {
    "max_operand": 10,
    "n_numbers": 20,
    "n_layer": 2,
    "d_model": 16,
    "n_head": 2,
    "d_mlp": 32,
    "steps": 6,
    "batch": 32,
    "n_checkpoints": 2,
    "first_heuristics_layer": 1,
    "n_prompts": 12,
    "faith_fracs": (0.015, 0.1, 0.5),
    "knockout_prompts": 10,
    "knockout_counts": (1, 2),
    "min_heuristic_neurons": 1,
    "probe_prompts": 60,
    "probe_epochs": 1,
    "perf_prompts": 10,
    "seeds": (0,),
    "quiet": True,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"], out=str(tmp_path / "runs"), results_dir=str(tmp_path / "results"), **TINY
    )
