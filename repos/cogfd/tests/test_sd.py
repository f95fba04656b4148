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


def tiny_clip(folder):
    """A random CLIPModel with the tiny tokenizer and an 8x8 image processor, saved locally."""
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPProcessor,
        CLIPTextConfig,
        CLIPVisionConfig,
    )

    torch.manual_seed(1)
    tok = text.tiny_tokenizer()
    kw = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1}
    kw["num_attention_heads"] = 2
    config = CLIPConfig(
        text_config=CLIPTextConfig(vocab_size=len(tok), max_position_embeddings=16, **kw),
        vision_config=CLIPVisionConfig(image_size=8, patch_size=4, **kw),
        projection_dim=8,
    )
    CLIPModel(config).save_pretrained(folder)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 8}, crop_size=8)
    CLIPProcessor(image_processor=image_processor, tokenizer=tok).save_pretrained(folder)


def test_full_sd_path_erases_and_clip_scores_with_gradient_checkpointing(tmp_path, capsys):
    """The paper's protocol end to end on tiny random models: erase with checkpointing, then
    CLIP-score original and edited pipelines on the forget and retain prompts."""
    tiny_pipeline(tmp_path / "sd")
    tiny_clip(tmp_path / "clip")
    argv = ["train", "--preset", "full", "--device", "cpu", "--base-checkpoint"]
    argv += [str(tmp_path / "sd"), "--clip-model", str(tmp_path / "clip")]
    argv += ["--out", str(tmp_path / "r"), "--erase-steps", "2", "--erase-lr", "1e-2"]
    argv += ["--n-train-images", "2", "--ddim-steps", "2", "--eval-samples", "2"]
    argv += ["--gradient-checkpointing", "--quiet"]
    assert main(argv) == 0
    record = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert set(record["clip_forget_original"]) == set(record["erase"])
    assert set(record["clip_retain_edited"]) == set(record["retain"])
    scores = list(record["clip_forget_original"].values()) + list(
        record["clip_retain_edited"].values()
    )
    assert all(0 <= v <= 100 for v in scores)
    drop = sum(record["clip_forget_original"].values()) - sum(record["clip_forget_edited"].values())
    assert record["clip_forget_drop"] == pytest.approx(drop / len(record["erase"]))
    assert record["erase_retain_score"] >= 0
    capsys.readouterr()


def test_clip_score_is_torchmetrics_definition(tmp_path):
    """100 * max(cos(image embedding, text embedding), 0), checked against the model's own
    logits (logit_scale * cos)."""
    from transformers import CLIPModel, CLIPProcessor

    tiny_clip(tmp_path / "clip")
    score = sd.clip_scorer(tmp_path / "clip")
    images = torch.rand(3, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    prompts = ["red circle", "blue", "green square"]
    got = score(images, prompts)
    model = CLIPModel.from_pretrained(tmp_path / "clip")
    proc = CLIPProcessor.from_pretrained(tmp_path / "clip")
    batch = proc(
        text=prompts, images=list(images), return_tensors="pt", padding=True, do_rescale=False
    )
    with torch.no_grad():
        logits = model(**batch).logits_per_image.diagonal()
    cos = logits / model.logit_scale.exp()
    torch.testing.assert_close(got, 100 * cos.clamp(min=0), rtol=1e-4, atol=1e-4)


def test_fp16_on_cpu_is_a_one_line_error(tmp_path, capsys):
    tiny_pipeline(tmp_path / "sd")
    argv = ["train", "--base-checkpoint", str(tmp_path / "sd"), "--fp16", "--device", "cpu"]
    assert main([*argv, "--out", str(tmp_path / "r")]) == 2
    assert "fp16 needs a CUDA device" in capsys.readouterr().err


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
