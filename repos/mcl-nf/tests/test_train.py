"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from PIL import Image

from conftest import TINY
from mcl_nf.config import PHOTOS, PRESETS
from mcl_nf.data import write_skimage_photos
from mcl_nf.testtime import METHODS
from mcl_nf.train import evaluate, train_and_evaluate


def test_smoke_writes_artefacts_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["grid"] == tiny.grid
    assert (tmp_path / "run" / "mcl_nf_init.safetensors").exists()
    assert {k.split("/")[0] for k in metrics} == set(METHODS)
    assert all(math.isfinite(v) for v in metrics.values())
    # eval reloads the initialisations and fits the run's held-out signals again
    assert evaluate(PRESETS["quick"], tmp_path / "run") == metrics


def test_eval_fits_from_the_saved_initialisations(tiny, tmp_path):
    from safetensors.torch import load_file, save_file

    run = tmp_path / "run"
    metrics = train_and_evaluate(dataclasses.replace(tiny, signal="audio"), run)
    (run / "metrics.json").unlink()
    init = run / "mcl_nf_init.safetensors"
    saved = load_file(str(init))
    save_file({k: v * 0 for k, v in saved.items()}, str(init))
    again = evaluate(tiny, run)
    assert again["MCL-NF/psnr_step1"] != metrics["MCL-NF/psnr_step1"]
    assert again["MOL/psnr_step1"] == metrics["MOL/psnr_step1"]  # its file is untouched
    save_file({k: v[:1] for k, v in saved.items()}, str(init))
    with pytest.raises(ValueError, match="mcl_nf_init.safetensors: parameters do not fit"):
        evaluate(tiny, run)


@pytest.mark.parametrize("signal", ["image", "nerf"])
def test_same_seed_same_numbers(signal, tiny, tmp_path):
    cfg = dataclasses.replace(tiny, signal=signal)
    assert train_and_evaluate(cfg, tmp_path / "a") == train_and_evaluate(cfg, tmp_path / "b")


@pytest.mark.parametrize("signal", ["image", "video", "nerf"])
def test_full_preset_runs_one_step_at_tiny_size(signal, tmp_path):
    keep = ("grid", "eval_steps", "meta_steps", "video_frames", "nerf_samples")
    shrink = {k: v for k, v in TINY.items() if k not in keep}
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", **shrink, meta_steps=1, eval_steps=(1,), signal=signal
    )
    assert full.grid == 4 and full.hidden == TINY["hidden"]
    assert {"video", "nerf"} <= set(full.bench_signals) and full.nerf_samples == 64
    metrics = train_and_evaluate(full, tmp_path)
    assert math.isfinite(metrics["MCL-NF/psnr_step1"])


@pytest.mark.parametrize("signal", ["audio", "video", "nerf"])
def test_audio_video_and_nerf_smoke_runs_every_method(signal, tiny, tmp_path):
    metrics = train_and_evaluate(dataclasses.replace(tiny, signal=signal), tmp_path)
    assert {k.split("/")[0] for k in metrics} == set(METHODS)
    assert all(math.isfinite(v) for v in metrics.values())
    assert metrics["MCL-NF/forgetting_q1_db"] == 0.0
    assert any("ssim" in k for k in metrics) == (signal == "video")


def test_image_folder_end_to_end_on_images_the_test_writes(tiny, tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "celeba_like"
    folder.mkdir()
    for i in range(5):
        Image.fromarray(rng.integers(0, 256, (12, 10, 3), dtype=np.uint8)).save(folder / f"{i}.jpg")
    cfg = dataclasses.replace(tiny, image_folder=str(folder))
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert all(math.isfinite(v) for v in metrics.values())
    with pytest.raises(ValueError, match="need more than the 5 held out"):
        train_and_evaluate(dataclasses.replace(cfg, n_test=5), tmp_path / "run2")
    crops = dataclasses.replace(cfg, crop_side=12, test_images=1)
    metrics = train_and_evaluate(crops, tmp_path / "run3")
    assert all(math.isfinite(v) for v in metrics.values())


def test_chunks_of_held_out_signals_give_the_same_metrics(tiny, tmp_path):
    """test_points small enough for one signal per chunk: the chunks' means, weighted, are the
    all-at-once metrics (every metric is a mean over signals)."""
    cfg = dataclasses.replace(tiny, signal="nerf")
    whole = train_and_evaluate(cfg, tmp_path / "a")
    chunked = train_and_evaluate(dataclasses.replace(cfg, test_points=1), tmp_path / "b")
    assert chunked.keys() == whole.keys()
    for key, value in whole.items():
        assert chunked[key] == pytest.approx(value, rel=1e-4, abs=1e-4), key


def test_paper_preset_is_the_issue_scale_on_photographs():
    paper = PRESETS["paper"]
    assert paper.meta_batch == 8 and paper.meta_steps >= 400 and paper.seeds == (0, 1, 2)
    assert paper.image_folder == PHOTOS and paper.crop_side > paper.image_size
    assert set(paper.bench_signals) == set(PRESETS["quick"].bench_signals)


def test_paper_preset_runs_at_tiny_size_on_the_scikit_image_photographs(tmp_path):
    """The paper preset's own settings but the tiny sizes: photographs written by `photos`,
    random crops of the training photographs, crops of the held-out ones."""
    write_skimage_photos(tmp_path / "photos")
    shrink = {k: v for k, v in TINY.items() if k not in ("image_size",)}
    cfg = dataclasses.replace(
        PRESETS["paper"], **shrink, image_size=16, image_folder=str(tmp_path / "photos")
    )
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert {k.split("/")[0] for k in metrics} == set(METHODS)
    assert all(math.isfinite(v) for v in metrics.values())
