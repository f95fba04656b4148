"""CoGFD on a local StableDiffusionPipeline folder: a tiny random pipeline is built, saved with
save_pretrained, erased through the CLI, and the edited pipeline loads and samples again."""

from __future__ import annotations

import json

import pytest
import torch
from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel

from cogfd import sd, text
from cogfd.cli import main


def tiny_pipeline(folder):
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        block_out_channels=(8, 16),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=text.EMBED_DIM,
        attention_head_dim=4,
        norm_num_groups=4,
    )
    vae = AutoencoderKL(
        block_out_channels=(8,),
        down_block_types=("DownEncoderBlock2D",),
        up_block_types=("UpDecoderBlock2D",),
        latent_channels=4,
        norm_num_groups=4,
        sample_size=8,
    )
    encoder = text.tiny_text_encoder()
    pipe = StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        text_encoder=encoder.model,
        tokenizer=encoder.tokenizer,
        scheduler=DDIMScheduler(
            beta_schedule="scaled_linear",
            beta_start=0.00085,
            beta_end=0.012,
            clip_sample=False,
            set_alpha_to_one=False,
            steps_offset=1,
        ),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(folder)
    return pipe


def test_cogfd_erases_a_saved_pipeline_folder(tmp_path, capsys):
    original = tiny_pipeline(tmp_path / "sd")
    argv = ["train", "--base-checkpoint", str(tmp_path / "sd"), "--out", str(tmp_path / "r")]
    argv += ["--erase-steps", "3", "--erase-lr", "1e-2", "--n-train-images", "2"]
    argv += ["--ddim-steps", "2", "--quiet"]
    assert main(argv) == 0
    record = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert record["loss_first"] == pytest.approx(1.1, abs=1e-6)
    assert "red circle" in record["erase"] and "red" in record["retain"]
    edited = sd.load_pipeline(tmp_path / "r" / "pipeline")
    before, after = original.unet.state_dict(), edited.unet.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all("attn2" in k and "to_v" not in k for k in changed)
    images = edited(["red circle"], num_inference_steps=2, output_type="pt").images
    assert images.shape == (1, 3, 8, 8)
    capsys.readouterr()


def test_not_a_pipeline_folder_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "sd" / "unet").mkdir(parents=True)
    argv = ["train", "--base-checkpoint", str(tmp_path / "sd"), "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is not a StableDiffusionPipeline folder: missing vae" in err


def test_missing_local_llm_folder_is_a_one_line_error(tmp_path, capsys):
    argv = ["train", "--graph-llm", str(tmp_path / "nope"), "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    assert "graph_llm" in capsys.readouterr().err
