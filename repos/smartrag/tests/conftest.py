"""Shared fixtures: the quick preset shrunk until a run takes a few seconds."""

from __future__ import annotations

import dataclasses
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest
import torch

from smartrag.config import PRESETS

torch.set_num_threads(1)

TINY = {
    "n_entities": 12,
    "n_values": 3,
    "n_distractors": 4,
    "n_layer": 1,
    "d_model": 32,
    "n_head": 2,
    "pretrain_steps": 3,
    "sft_steps": 3,
    "lm_batch": 8,
    "ppo_iterations": 2,
    "ppo_batch": 8,
    "ppo_minibatch": 8,
    "rewriter_samples": 2,
    "rewriter_steps": 2,
    "seeds": (0, 1),
    "swap_retriever": False,
    "rewrite_control": False,  # on in the smoke and bench tests
    "quiet": True,
    "workers": 1,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"], out=str(tmp_path / "runs"), results_dir=str(tmp_path / "results"), **TINY
    )
