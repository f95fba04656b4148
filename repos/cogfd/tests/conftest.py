"""Shared fixtures: the quick preset shrunk until a whole run takes seconds."""

from __future__ import annotations

import dataclasses
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch

from cogfd.config import PRESETS

torch.set_num_threads(1)

TINY = {
    "pretrain_steps": 2,
    "pretrain_batch": 8,
    "oracle_steps": 2,
    "erase_steps": 2,
    "eval_samples": 2,
    "ddim_steps": 2,
    "n_train_images": 2,
    "seeds": (0,),
    "window_ablation": (900,),
    "steps_ablation": (3,),
    "lr_grid": (1e-3, 2e-3),
    "uce_lambda_grid": (0.1,),
    "quiet": True,
}
"""Flags that shrink any preset to a seconds-long run (also used on the README commands)."""


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        **TINY,
        widths=(8, 16),
        methods=("original", "cogfd", "uce"),
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
    )


@pytest.fixture(scope="session")
def small_unet():
    from cogfd import models, text

    torch.manual_seed(0)
    return models.make_unet(8, (8, 16)).eval().requires_grad_(
        False
    ), text.tiny_text_encoder().eval()
