"""Shared fixtures: the quick preset shrunk until a run takes about a second."""

from __future__ import annotations

import dataclasses
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")

import torch

from sparsyfed.config import PRESETS

torch.set_num_threads(1)

SHRINK = {"rounds": 2, "n_clients": 4, "clients_per_round": 2, "seeds": (0,), "flower_rounds": 0}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        **SHRINK,
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        quiet=True,
    )
