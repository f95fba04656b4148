"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size,
and the toy model learning its training set."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from arith_heuristics.config import OPERATORS, PRESETS
from arith_heuristics.data import Vocab, all_legal, split
from arith_heuristics.lm import accuracy, train
from arith_heuristics.model import build_model
from arith_heuristics.train import evaluate, train_and_evaluate


def test_smoke_writes_config_checkpoints_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["steps"] == tiny.steps
    assert len(list((tmp_path / "run").glob("checkpoint_*.safetensors"))) == tiny.n_checkpoints
    analysis = json.loads((tmp_path / "run" / "analysis.json").read_text())
    assert np.array(analysis["probe_grid"]).shape == (tiny.n_layer + 1, 5)
    # F is NaN only where every prompt's NL(M) - NL(empty) is too small (a 6-step model)
    skip = ("knockout_", "faith") if metrics["faith_excluded_prompts"] == 1.0 else ("knockout_",)
    assert metrics and all(
        math.isfinite(v) for k, v in metrics.items() if not any(s in k for s in skip)
    )
    assert json.loads((tmp_path / "run" / "heuristics.json").read_text())["checkpoints"]
    assert 0 <= metrics["classified_share"] <= 1
    again = evaluate(tiny, tmp_path / "run")  # the final checkpoint, reloaded and scored again
    keys = [k for k in metrics if k.startswith(("train_acc", "test_acc"))]
    assert len(keys) == 10 and {k: again[k] for k in keys} == {k: metrics[k] for k in keys}
    final = max((tmp_path / "run").glob("checkpoint_*.safetensors"))
    save_file({"wte.weight": torch.zeros(2, 2)}, str(final))  # valid file, wrong model
    with pytest.raises(ValueError, match=f"{final}: checkpoint does not fit this model"):
        evaluate(tiny, tmp_path / "run")


def test_same_seed_same_numbers(tiny, tmp_path):
    a = train_and_evaluate(tiny, tmp_path / "a")
    b = train_and_evaluate(tiny, tmp_path / "b")
    assert json.dumps(a) == json.dumps(b)  # NaN-safe equality


def test_resume_reuses_the_checkpoint(tiny, tmp_path):
    first = train_and_evaluate(tiny, tmp_path / "r")
    again = train_and_evaluate(dataclasses.replace(tiny, resume=True), tmp_path / "r")
    assert json.dumps(first) == json.dumps(again)


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    sizes = {"max_operand": 8, "n_numbers": 64, "n_layer": 2, "d_model": 16, "n_head": 2}
    full = dataclasses.replace(
        PRESETS["full"],
        device="cpu",
        steps=1,
        d_mlp=32,
        n_checkpoints=1,
        probe_prompts=40,
        probe_epochs=1,
        n_prompts=8,
        first_heuristics_layer=1,
        quiet=True,
        **sizes,
    )
    assert math.isfinite(train_and_evaluate(full, tmp_path)["train_acc"])


def test_toy_model_reaches_over_90_percent_training_accuracy(tiny, tmp_path):
    cfg = dataclasses.replace(
        tiny, d_model=32, d_mlp=128, n_head=4, steps=600, lr=5e-3, batch=64, weight_decay=0.0
    )
    vocab = Vocab(cfg.n_numbers)
    train_set, _ = split(all_legal(OPERATORS, cfg.max_operand, cfg.n_numbers), 0.8, 0)
    torch.manual_seed(0)
    model = build_model(cfg, vocab)
    train(model, train_set, vocab, cfg, tmp_path)
    assert accuracy(model, train_set, vocab, "cpu") > 0.9
