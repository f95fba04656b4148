"""Shared fixtures: the quick preset shrunk until a run takes about a second."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from degem.config import PRESETS

torch.set_num_threads(1)  # as the presets do (Config.threads); unit tests use tiny tensors

SHRINK = {"n_nodes": 200, "feat_dim": 16, "hidden": 32, "energy_hidden": 16, "epochs": 5}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        **SHRINK,
        seeds=(0,),
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        quiet=True,
    )
