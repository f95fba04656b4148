"""CoGFD on a real text-to-image model: a local diffusers StableDiffusionPipeline folder
(unet/, vae/, text_encoder/, tokenizer/, scheduler/, model_index.json), e.g. SD v1.4/1.5.

The same `erase_cogfd` as in the procedural world runs on SD's latents: the training images
are sampled from the original pipeline (`output_type="latent"`, the official img_prepare.py),
the prompts go through the pipeline's CLIPTokenizer and CLIPTextModel, only the UNet's
attn2.to_q/to_k/to_out train, and the edited pipeline is saved with save_pretrained. With a
local CLIP folder (--clip-model), the original and the edited pipeline sample the same noise on
every forget (erase-set) and retain prompt and CLIP scores them (the paper's metric: 100 *
max(cos(image, text), 0), torchmetrics' CLIPScore), giving the erase-retain score
|dCLIP_forget / dCLIP_retain|. On SD this wants a GPU; a tiny random pipeline runs it on CPU.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch

from . import text
from .decoupling import erase_cogfd
from .results import atomic_write_json

PARTS = ("unet", "vae", "text_encoder", "tokenizer", "scheduler", "model_index.json")


def check_folder(folder: str | Path) -> Path:
    """ValueError naming what is missing when `folder` is not a diffusers pipeline folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"base_checkpoint {folder} is not a folder")
    missing = [p for p in PARTS if not (folder / p).exists()]
    if missing:
        raise ValueError(
            f"base_checkpoint {folder} is not a StableDiffusionPipeline folder: missing "
            + ", ".join(missing)
        )
    return folder


def load_pipeline(folder: str | Path, device: str = "cpu", fp16: bool = False) -> Any:
    from diffusers import StableDiffusionPipeline

    folder = check_folder(folder)
    if fp16 and not str(device).startswith("cuda"):
        raise ValueError(f"fp16 needs a CUDA device, got device {device!r}")
    try:
        pipe = StableDiffusionPipeline.from_pretrained(
            folder,
            local_files_only=True,
            safety_checker=None,
            requires_safety_checker=False,
            dtype=torch.float16 if fp16 else torch.float32,
        )
    except (OSError, ValueError, RuntimeError) as exc:
        raise ValueError(f"base_checkpoint {folder} could not be loaded ({exc})") from exc
    pipe.set_progress_bar_config(disable=True)
    return pipe.to(device)


def clip_scorer(folder: str | Path, device: str = "cpu") -> Any:
    """A function (images in [0, 1] (B, 3, H, W), prompts) -> CLIP scores (B,), 100 *
    max(cos, 0) as torchmetrics' CLIPScore, from a local transformers CLIP folder."""
    from transformers import CLIPModel, CLIPProcessor

    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise ValueError(f"clip_model {folder} is not a transformers CLIP folder (no config.json)")
    try:
        model = CLIPModel.from_pretrained(folder, local_files_only=True).to(device).eval()
        processor = CLIPProcessor.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ValueError(f"clip_model {folder} could not be loaded ({exc})") from exc

    @torch.no_grad()
    def score(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        batch = processor(
            text=prompts,
            images=list(images.float().cpu()),
            return_tensors="pt",
            padding=True,
            do_rescale=False,
        ).to(device)
        out = model(**batch)
        img = torch.nn.functional.normalize(out.image_embeds, dim=-1)
        txt = torch.nn.functional.normalize(out.text_embeds, dim=-1)
        return 100 * (img * txt).sum(-1).clamp(min=0).cpu()

    return score


def clip_scores(pipe: Any, unet: Any, prompts: list[str], cfg: Any, score) -> list[float]:
    """Mean CLIP score per prompt of cfg.eval_samples images sampled with `unet` in `pipe`
    (noise seeded by cfg.seed + 10_000, the same for every UNet)."""
    pipe.unet = unet
    gen = torch.Generator().manual_seed(cfg.seed + 10_000)
    out = []
    for prompt in prompts:
        images = pipe(
            [prompt] * cfg.eval_samples,
            num_inference_steps=cfg.ddim_steps,
            guidance_scale=cfg.guidance,
            generator=gen,
            output_type="pt",
        ).images
        out.append(float(score(images, [prompt] * len(images)).mean()))
    return out


def erase_pipeline(cfg: Any, erase: list[str], retain: list[str], out: Path) -> dict[str, Any]:
    """Erase `cfg.combination` (and the graph's erase set) from the pipeline in
    cfg.base_checkpoint; save the edited pipeline under out/pipeline; with cfg.clip_model,
    CLIP-score the original and edited pipelines; return the run's record."""
    score = clip_scorer(cfg.clip_model, cfg.device) if cfg.clip_model else None
    pipe = load_pipeline(cfg.base_checkpoint, cfg.device, cfg.fp16)
    gen = torch.Generator().manual_seed(cfg.seed)
    latents = pipe(
        [cfg.combination] * cfg.n_train_images,
        num_inference_steps=cfg.ddim_steps,
        guidance_scale=cfg.guidance,
        generator=gen,
        output_type="latent",
    ).images
    encoder = text.TextEncoder(pipe.text_encoder, pipe.tokenizer, pipe.tokenizer.model_max_length)
    original = pipe.unet
    unet = copy.deepcopy(original).float() if cfg.fp16 else original  # fp32 weights to train
    if cfg.gradient_checkpointing:
        unet.enable_gradient_checkpointing()
    edited, losses, erase_curve = erase_cogfd(
        unet,
        encoder,
        latents.detach().float(),
        erase,
        retain,
        steps=cfg.erase_steps,
        lr=cfg.erase_lr,
        batch=cfg.erase_batch,
        t_window=(cfg.t_start, cfg.t_end),
        erase_weight=cfg.erase_weight,
        gen=gen,
        quiet=cfg.quiet,
    )
    edited = edited.to(original.dtype)
    if cfg.gradient_checkpointing:
        edited.disable_gradient_checkpointing()
    record: dict[str, Any] = {
        "base_checkpoint": str(cfg.base_checkpoint),
        "edited_pipeline": str(out / "pipeline"),
        "erase": erase,
        "retain": retain,
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "erase_mse_last": erase_curve[-1],
    }
    if score is not None:
        record.update(clip_record(pipe, original, edited, erase, retain, cfg, score))
    pipe.unet = edited
    pipe.save_pretrained(out / "pipeline")
    atomic_write_json(out / "metrics.json", record)
    return record


def clip_record(pipe, original, edited, erase, retain, cfg, score) -> dict[str, Any]:
    """Per-prompt CLIP scores of both UNets and the paper's summary numbers."""
    rec: dict[str, Any] = {"clip_model": str(cfg.clip_model)}
    for group, prompts in (("forget", erase), ("retain", retain)):
        before = clip_scores(pipe, original, prompts, cfg, score)
        after = clip_scores(pipe, edited, prompts, cfg, score)
        rec[f"clip_{group}_original"] = dict(zip(prompts, before, strict=True))
        rec[f"clip_{group}_edited"] = dict(zip(prompts, after, strict=True))
        rec[f"clip_{group}_drop"] = sum(before) / len(before) - sum(after) / len(after)
    rec["erase_retain_score"] = abs(rec["clip_forget_drop"]) / max(
        abs(rec["clip_retain_drop"]), 1e-6
    )
    return rec
