"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

from conftest import TINY

from mcl_nf.config import PRESETS
from mcl_nf.train import METHODS, evaluate, train_and_evaluate


def test_smoke_writes_artefacts_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["grid"] == tiny.grid
    assert (tmp_path / "run" / "mcl_nf_init.safetensors").exists()
    assert {k.split("/")[0] for k in metrics} == set(METHODS)
    assert all(math.isfinite(v) for v in metrics.values())
    assert evaluate(tmp_path / "run") == metrics


def test_same_seed_same_numbers(tiny, tmp_path):
    assert train_and_evaluate(tiny, tmp_path / "a") == train_and_evaluate(tiny, tmp_path / "b")


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    shrink = {k: v for k, v in TINY.items() if k not in ("grid", "eval_steps", "meta_steps")}
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", **shrink, meta_steps=1, eval_steps=(1,)
    )
    assert full.grid == 4 and full.hidden == TINY["hidden"]
    metrics = train_and_evaluate(full, tmp_path)
    assert math.isfinite(metrics["MCL-NF/psnr_step1"])
