"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from smartrag.config import PRESETS
from smartrag.train import (
    CONTROL_RL,
    CONTROL_SFT,
    METHODS,
    deterministic,
    evaluate,
    train_and_evaluate,
)

from .conftest import TINY
from .test_pretrained import _popqa_files, save_tiny_llama


def test_smoke_writes_artefacts_and_finite_metrics(tiny, tmp_path):
    """With the p_rewrite = 0 control run: its checkpoints and rows, reloaded by eval and
    reproduced by --resume like the main run's."""
    tiny = dataclasses.replace(tiny, rewrite_control=True)
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["quota"] == tiny.quota
    for name in ("sft.safetensors", "smartrag.safetensors", "rewriter.safetensors", "labels.npy",
                 CONTROL_SFT, CONTROL_RL):  # fmt: skip
        assert (tmp_path / "run" / name).exists()
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    rows = {k.split("/")[0] for k in metrics}
    deciding = ("sft_only", "modular", "modular_raw_query", "smartrag", "smartrag_shuffled_docs",
                "sft_only_no_rewrite", "smartrag_no_rewrite")  # fmt: skip
    tuned = {f"{m}_tuned" for m in deciding}
    assert rows == set(METHODS) | set(deciding) | tuned
    assert "smartrag/rewrite_control_sft_wall_s" in metrics
    assert "smartrag_tuned/retrieval_rate_head_shuffled_labels" in metrics
    # eval: the saved checkpoints, reloaded, give every evaluation metric of train again
    again = evaluate(dataclasses.replace(PRESETS["quick"], quiet=True), tmp_path / "run")
    assert deterministic(again) and deterministic(again).items() <= deterministic(metrics).items()
    assert "smartrag/em" in again and "modular/em" in again
    assert "smartrag_no_rewrite/hit_rate" in again and "sft_only_no_rewrite_tuned/em" in again
    again = train_and_evaluate(dataclasses.replace(tiny, resume=True), tmp_path / "run")
    assert deterministic(again) == deterministic(
        metrics
    )  # resuming from the checkpoints reproduces the evaluation


def test_same_seed_same_numbers(tiny, tmp_path):
    a = deterministic(train_and_evaluate(tiny, tmp_path / "a"))
    assert a == deterministic(train_and_evaluate(tiny, tmp_path / "b"))
    assert "smartrag/em" in a and "smartrag/train_reward_last" in a


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    """The full preset is the paper's setting (a local causal LM with LoRA, PopQA files, tau =
    0.5); here with a tiny random Llama and PopQA-format files the test writes, on the CPU."""
    full = PRESETS["full"]
    assert full.lora_r > 0 and full.tau == 0.5 and full.decision == "full" and full.quota == 1
    shrink = {k: v for k, v in TINY.items() if k not in ("n_layer", "d_model", "n_head")}
    tiny = dataclasses.replace(full, device="cpu", out=str(tmp_path / "runs"), **shrink)
    save_tiny_llama(tmp_path / "llama", tiny)
    qf, cf, _ = _popqa_files(tmp_path, tiny)
    cfg = dataclasses.replace(tiny, policy_path=str(tmp_path / "llama"), questions=qf, corpus=cf,
                              lora_r=4, ppo_iterations=1, sft_steps=1, max_new=8)  # fmt: skip
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert math.isfinite(metrics["smartrag/em"]) and math.isfinite(metrics["smartrag/f1"])


def test_eval_names_a_damaged_run_file(tiny, tmp_path):
    run = tmp_path / "run"
    train_and_evaluate(dataclasses.replace(tiny, ppo_iterations=1), run)
    (run / "labels.npy").write_bytes(b"not numpy")
    with pytest.raises(ValueError, match=f"^{run / 'labels.npy'}: unreadable labels file"):
        evaluate(tiny, run)
    ckpt = run / "smartrag.safetensors"
    ckpt.write_bytes(ckpt.read_bytes()[:40])
    with pytest.raises(ValueError, match=f"^{ckpt}: corrupt checkpoint"):
        evaluate(tiny, run)
    sft = run / "sft.safetensors"  # train --resume with a damaged warm-up checkpoint
    sft.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=f"^{sft}: corrupt checkpoint"):
        train_and_evaluate(dataclasses.replace(tiny, ppo_iterations=1, resume=True), run)
