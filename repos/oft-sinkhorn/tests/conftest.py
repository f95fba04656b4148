"""Shared fixtures: the quick preset shrunk until a benchmark run takes a few seconds."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from oft_sinkhorn.config import PRESETS

torch.set_num_threads(1)


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        n=20,
        sizes=(20, 30),
        seeds=(0, 1),
        eps=(0.3, 0.1, 0.03),
        tune_n=20,
        compare_n=20,
        control_n=20,
        compare_max_iter=20_000,
        bipartite_size=5,
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        quiet=True,
    )
