"""Shared fixtures: the quick preset shrunk until a run takes a few seconds."""

from __future__ import annotations

import dataclasses
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from regent.config import PRESETS

TINY = {
    "n_train_tasks": 2,
    "n_test_tasks": 1,
    "train_demos": 4,
    "n_retrieved": 4,
    "d_model": 16,
    "n_layers": 1,
    "n_heads": 2,
    "steps": 3,
    "batch_size": 8,
    "bc_steps": 3,
    "mtbc_steps": 3,
    "demo_counts": (1, 2),
    "eval_episodes": 2,
    "ablation_sizes": (1, 2, 4),
    "ablation_demos": 2,
    "mw_train_tasks": 2,
    "mw_train_demos": 2,
    "mw_demo_counts": (1, 2),
    "mw_eval_episodes": 2,
    "mw_horizon": 12,
    "quiet": True,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        seeds=(0, 1),
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        **TINY,
    )


@pytest.fixture(autouse=True)
def one_thread():
    """One torch and faiss thread, as the CLI's default (--threads 1): the machines are shared."""
    from regent.train import set_threads

    set_threads(1)
