"""Signals and their split into sub-tasks: procedural images (deterministic in the seed), an
image-folder loader for local datasets, and the fixed spatial partition that routes each
coordinate to exactly one module (paper: one module per region, as in Mega-NeRF / Switch-NeRF)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


def procedural_images(n: int, size: int, seed: int) -> torch.Tensor:
    """n RGB images in [0, 1], shape (n, size, size, 3): 2-4 sinusoid gratings plus 3-6 blobs."""
    rng = np.random.default_rng(seed)
    ax = np.linspace(-1.0, 1.0, size)
    yy, xx = np.meshgrid(ax, ax, indexing="ij")
    images = np.empty((n, size, size, 3))
    for i in range(n):
        img = np.full((size, size, 3), 0.5) + rng.normal(0, 0.05, 3)
        for _ in range(rng.integers(2, 5)):
            freq, angle, phase = rng.uniform(1.0, 4.0), rng.uniform(0, math.pi), rng.uniform(0, 6.3)
            wave = np.sin(math.pi * freq * (xx * math.cos(angle) + yy * math.sin(angle)) + phase)
            img += 0.12 * wave[..., None] * rng.uniform(-1, 1, 3)
        for _ in range(rng.integers(3, 7)):
            cx, cy, width = rng.uniform(-0.8, 0.8), rng.uniform(-0.8, 0.8), rng.uniform(0.08, 0.3)
            blob = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * width**2))
            img += 0.35 * blob[..., None] * rng.uniform(-1, 1, 3)
        images[i] = np.clip(img, 0.0, 1.0)
    return torch.from_numpy(images).float()


def load_image_folder(folder: str | Path, size: int, limit: int | None = None) -> torch.Tensor:
    """RGB images of a local folder (PNG/JPEG, e.g. CelebA), centre-cropped and resized to size."""
    from PIL import Image

    paths = sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise ValueError(f"no {'/'.join(IMAGE_SUFFIXES)} images in {folder}")
    images = []
    for path in paths[:limit]:
        img = Image.open(path).convert("RGB")
        side = min(img.size)
        left, top = (img.width - side) // 2, (img.height - side) // 2
        img = img.crop((left, top, left + side, top + side)).resize((size, size), Image.BILINEAR)
        images.append(np.asarray(img, dtype=np.float32) / 255.0)
    return torch.from_numpy(np.stack(images))


def check_signals(images: torch.Tensor, grid: int) -> None:
    """Clear errors for signals that cannot be split into grid x grid sub-tasks or hold NaNs."""
    if images.ndim != 4 or images.shape[-1] != 3 or images.shape[1] != images.shape[2]:
        raise ValueError(f"signals must have shape (n, H, H, 3), got {tuple(images.shape)}")
    if images.shape[1] % grid:
        raise ValueError(
            f"signal side {images.shape[1]} does not split into grid={grid} equal blocks per side"
        )
    if not torch.isfinite(images).all():
        raise ValueError("signals contain NaN or infinite pixels")


def partition(size: int, grid: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Coordinates in [-1, 1]^2 and pixel indices grouped by module.

    Returns coords (t, m, 2) and index (t, m) into the flattened size*size image, where t = grid^2
    sub-tasks in raster order and m = (size / grid)^2 points each. Every pixel appears once.
    """
    if size % grid:
        raise ValueError(
            f"signal side {size} does not split into grid={grid} equal blocks per side"
        )
    ax = torch.linspace(-1.0, 1.0, size)
    yy, xx = torch.meshgrid(ax, ax, indexing="ij")
    coords = torch.stack([xx, yy], dim=-1).reshape(-1, 2)
    block = size // grid
    rows = torch.arange(size).repeat_interleave(size) // block
    cols = torch.arange(size).repeat(size) // block
    owner = rows * grid + cols
    index = torch.stack([torch.nonzero(owner == k).squeeze(1) for k in range(grid * grid)])
    return coords[index], index


def psnr(mse: torch.Tensor | float) -> float:
    """Peak signal-to-noise ratio in dB for signals in [0, 1]: 10 log10(1 / MSE)."""
    return float(-10.0 * torch.log10(torch.as_tensor(mse, dtype=torch.float64)))
