"""CoGFD on a real text-to-image model: a local diffusers StableDiffusionPipeline folder
(unet/, vae/, text_encoder/, tokenizer/, scheduler/, model_index.json), e.g. SD v1.4/1.5.

The same `erase_cogfd` as in the procedural world runs on SD's latents: the training images
are sampled from the original pipeline (`output_type="latent"`, the official img_prepare.py),
the prompts go through the pipeline's CLIPTokenizer and CLIPTextModel, only the UNet's
attn2.to_q/to_k/to_out train, and the edited pipeline is saved with save_pretrained. Judging
SD samples needs CLIP ViT-B/32 (the paper's metric) and a GPU; this module erases only.
"""

from __future__ import annotations

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


def load_pipeline(folder: str | Path, device: str = "cpu") -> Any:
    from diffusers import StableDiffusionPipeline

    folder = check_folder(folder)
    try:
        pipe = StableDiffusionPipeline.from_pretrained(
            folder, local_files_only=True, safety_checker=None, requires_safety_checker=False
        )
    except (OSError, ValueError, RuntimeError) as exc:
        raise ValueError(f"base_checkpoint {folder} could not be loaded ({exc})") from exc
    pipe.set_progress_bar_config(disable=True)
    return pipe.to(device)


def erase_pipeline(cfg: Any, erase: list[str], retain: list[str], out: Path) -> dict[str, Any]:
    """Erase `cfg.combination` (and the graph's erase set) from the pipeline in
    cfg.base_checkpoint; save the edited pipeline under out/pipeline; return the run's record."""
    pipe = load_pipeline(cfg.base_checkpoint, cfg.device)
    gen = torch.Generator().manual_seed(cfg.seed)
    latents = pipe(
        [cfg.combination] * cfg.n_train_images,
        num_inference_steps=cfg.ddim_steps,
        guidance_scale=cfg.guidance,
        generator=gen,
        output_type="latent",
    ).images
    encoder = text.TextEncoder(pipe.text_encoder, pipe.tokenizer, pipe.tokenizer.model_max_length)
    edited, losses, erase_curve = erase_cogfd(
        pipe.unet,
        encoder,
        latents.detach(),
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
    pipe.unet = edited
    pipe.save_pretrained(out / "pipeline")
    record = {
        "base_checkpoint": str(cfg.base_checkpoint),
        "edited_pipeline": str(out / "pipeline"),
        "erase": erase,
        "retain": retain,
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "erase_mse_last": erase_curve[-1],
    }
    atomic_write_json(out / "metrics.json", record)
    return record
