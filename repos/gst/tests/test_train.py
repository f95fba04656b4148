"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch
from safetensors.torch import save_file

from gst import train
from gst.config import PRESETS
from gst.train import evaluate, train_and_evaluate


@pytest.mark.parametrize("method", ["gst", "cnn_pose"])
def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path, method):
    metrics = train_and_evaluate(tiny, tmp_path / "run", method)
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["steps"] == tiny.steps and saved["methods"] == [method]
    assert (tmp_path / "run" / "model.safetensors").exists()
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    assert "rot_acc15" in metrics and 0 <= metrics["rot_acc15"] <= 100
    (tmp_path / "run" / "metrics.json").unlink()  # eval measures again, it does not re-read
    train._prepare.cache_clear()  # and rebuilds the data and tokenizers, as a new process does
    assert evaluate(tiny, tmp_path / "run") == metrics


def test_eval_uses_the_saved_checkpoint(tiny, tmp_path):
    """An untrained model in the checkpoint's place measures differently; a checkpoint of
    another size, or a corrupt one, is a ValueError naming the file (with --resume too)."""
    metrics = train_and_evaluate(tiny, tmp_path, "pose_only")
    ckpt = tmp_path / "model.safetensors"
    prep = train.prepare(tiny)
    torch.manual_seed(1)
    untrained = train.build_model(tiny, prep.vocab).state_dict()
    save_file({k: v.contiguous() for k, v in untrained.items()}, str(ckpt))
    assert evaluate(tiny, tmp_path) != metrics
    wider = dataclasses.replace(tiny, width=32, heads=2)
    other = train.build_model(wider, prep.vocab).state_dict()
    save_file({k: v.contiguous() for k, v in other.items()}, str(ckpt))
    with pytest.raises(ValueError, match="model.safetensors: does not fit the pose_only model"):
        evaluate(tiny, tmp_path)
    ckpt.write_bytes(b"not safetensors")
    with pytest.raises(ValueError, match="model.safetensors: corrupt checkpoint"):
        evaluate(tiny, tmp_path)
    with pytest.raises(ValueError, match="model.safetensors: corrupt checkpoint"):
        train_and_evaluate(dataclasses.replace(tiny, resume=True), tmp_path, "pose_only")


def test_joint_model_reports_both_tasks(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path, "gst")
    for key in ("psnr", "ssim", "ppl_image", "rot_acc30", "centre_err", "ppl_camera"):
        assert key in metrics
    # perplexity is over the whole shared vocabulary; the zero-initialised head starts at its size
    vocab_size = tiny.image_codes + tiny.camera_codes + 2
    assert 1.0 <= metrics["ppl_camera"] <= vocab_size * 1.05


def test_same_seed_same_numbers(tiny, tmp_path):
    a = train_and_evaluate(tiny, tmp_path / "a", "gst")
    assert a == train_and_evaluate(tiny, tmp_path / "b", "gst")
    other = dataclasses.replace(tiny, seed=1)
    assert train_and_evaluate(other, tmp_path / "c", "gst") != a


def test_resume_skips_training_and_gives_same_metrics(tiny, tmp_path):
    a = train_and_evaluate(tiny, tmp_path, "pose_only")
    b = train_and_evaluate(
        dataclasses.replace(tiny, resume=True, steps=10_000), tmp_path, "pose_only"
    )
    assert a == b


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    from conftest import TINY

    sizes = {**TINY, "image_codes": 8, "camera_codes": 8, "steps": 1, "n_objects": 2}
    sizes.update(device="cpu", image_size=16, grid=4, vq_steps=1)
    full = dataclasses.replace(PRESETS["full"], **sizes)
    assert full.tokenizer == "vqvae" and full.dropout == 0.1
    metrics = train_and_evaluate(full, tmp_path, "gst")
    assert all(math.isfinite(v) for v in metrics.values())


def test_paper_preset_is_the_issue_scale():
    """Issue 72: a smaller world than quick (fewer objects and pixels, smaller codebooks) and
    longer training, same decoder."""
    quick, paper = PRESETS["quick"], PRESETS["paper"]
    assert paper.name == "paper" and paper.out == "runs/paper"
    assert paper.n_objects < quick.n_objects and paper.image_size < quick.image_size
    assert paper.image_codes < quick.image_codes and paper.camera_codes < quick.camera_codes
    assert paper.steps > quick.steps and (paper.width, paper.depth) == (quick.width, quick.depth)


def test_learning_rate_warms_up_from_the_first_step_then_decays():
    """Step 0 already trains (lr > 0), the peak comes at the end of warm-up, and the cosine ends
    at 10% of the peak."""
    cfg = dataclasses.replace(PRESETS["quick"], lr=1.0, warmup=4, steps=104)
    assert train.lr_at(0, cfg) == pytest.approx(0.25)
    assert train.lr_at(3, cfg) == pytest.approx(1.0)
    assert train.lr_at(4, cfg) == pytest.approx(1.0)
    assert train.lr_at(104, cfg) == pytest.approx(0.1)


def test_steps_are_equal_per_task_order():
    """The alternating joint model trains one order per step, so it gets twice the steps."""
    cfg = PRESETS["quick"]
    assert train.steps_for(cfg, "gst") == 2 * cfg.steps
    assert {train.steps_for(cfg, m) for m in ("gst_gen", "nvs_only", "pose_only")} == {cfg.steps}
