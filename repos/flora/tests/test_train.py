"""Smoke runs of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from PIL import Image

from flora.config import PRESETS
from flora.train import evaluate, train_and_evaluate


@pytest.mark.parametrize("task", ["structure", "transfer"])
def test_smoke_writes_config_finite_metrics_and_is_deterministic(tiny, tmp_path, task):
    cfg = dataclasses.replace(tiny, task=task, method="flora")
    metrics = train_and_evaluate(cfg, tmp_path / "a")
    assert json.loads((tmp_path / "a" / "config.json").read_text())["task"] == task
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    assert evaluate(tmp_path / "a") == metrics
    assert train_and_evaluate(cfg, tmp_path / "b") == metrics
    if task == "transfer":
        assert (tmp_path / "a" / "cnn_shift.safetensors").exists()
        assert all(0 <= v <= 100 for k, v in metrics.items() if k.endswith("_acc"))


def test_structure_fit_recovers_an_exact_tucker_target(tiny, tmp_path):
    """A loss that falls: FLoRA at the teacher's ranks recovers it, rank 1 cannot."""
    cfg = dataclasses.replace(tiny, task="structure", struct_steps=300, struct_batch=32)
    m = train_and_evaluate(cfg, tmp_path)
    assert m["tucker_relerr_r2"] < 0.05 < m["tucker_relerr_r1"]


def test_full_preset_runs_one_step_at_tiny_size_on_an_image_folder(tmp_path):
    rng = np.random.default_rng(0)
    for cls in ("a", "b"):
        (tmp_path / "imgs" / cls).mkdir(parents=True)
        for i in range(5):
            Image.fromarray(rng.integers(0, 255, (20, 20, 3), dtype=np.uint8)).save(
                tmp_path / "imgs" / cls / f"{i}.png"
            )
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", quiet=True, backbones=("convnext",), convnext_depths=(1, 1),
        convnext_dims=(8, 16), image_size=16, pretrain_epochs=1, epochs=1, data_dir=str(tmp_path / "imgs"),
    )  # fmt: skip
    metrics = train_and_evaluate(full, tmp_path / "run")
    assert set(metrics) == {"convnext_folder_acc", "convnext_folder_val_acc", "convnext_trainable",
                            "convnext_rank"}  # fmt: skip
    assert (tmp_path / "run" / "convnext_folder.safetensors").exists()
