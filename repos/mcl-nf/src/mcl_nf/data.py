"""Signals and their split into sub-tasks: procedural images, 1-D audio chirps and short videos
(deterministic in the seed), an image-folder loader for local datasets, and the fixed partitions (image blocks,
audio time segments) that route each coordinate to exactly one module (paper: one module per
region or time segment, as in Mega-NeRF / Switch-NeRF)."""

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


def procedural_chirps(n: int, length: int, seed: int) -> torch.Tensor:
    """n 1-D "audio" clips in [0, 1], shape (n, length, 1): 0.5 plus 1-3 linear chirps, each
    sweeping from f0 to f1 cycles per clip with its own amplitude and phase."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, length)
    clips = np.empty((n, length, 1))
    for i in range(n):
        clip = np.full(length, 0.5)
        for _ in range(rng.integers(1, 4)):
            f0, f1 = rng.uniform(2.0, 12.0), rng.uniform(8.0, 40.0)
            amp, phase = rng.uniform(0.06, 0.16), rng.uniform(0, 2 * math.pi)
            clip += amp * np.sin(2 * math.pi * (f0 * t + 0.5 * (f1 - f0) * t**2) + phase)
        clips[i, :, 0] = np.clip(clip, 0.0, 1.0)
    return torch.from_numpy(clips).float()


def procedural_videos(n: int, frames: int, size: int, seed: int) -> torch.Tensor:
    """n short RGB videos in [0, 1], shape (n, frames, size, size, 3): a static background of
    2-4 sinusoid gratings and 3-6 Gaussian blobs moving on straight lines."""
    rng = np.random.default_rng(seed)
    ax = np.linspace(-1.0, 1.0, size)
    yy, xx = np.meshgrid(ax, ax, indexing="ij")
    time = np.linspace(0.0, 1.0, frames)[:, None, None]
    videos = np.empty((n, frames, size, size, 3))
    for i in range(n):
        video = np.full((frames, size, size, 3), 0.5) + rng.normal(0, 0.05, 3)
        for _ in range(rng.integers(2, 5)):
            freq, angle, phase = rng.uniform(1.0, 4.0), rng.uniform(0, math.pi), rng.uniform(0, 6.3)
            wave = np.sin(math.pi * freq * (xx * math.cos(angle) + yy * math.sin(angle)) + phase)
            video += 0.12 * wave[..., None] * rng.uniform(-1, 1, 3)
        for _ in range(rng.integers(3, 7)):
            (cx, cy), (vx, vy) = rng.uniform(-0.7, 0.7, 2), rng.uniform(-0.6, 0.6, 2)
            width = rng.uniform(0.1, 0.3)
            dist2 = (xx - cx - vx * time) ** 2 + (yy - cy - vy * time) ** 2
            video += 0.35 * np.exp(-dist2 / (2 * width**2))[..., None] * rng.uniform(-1, 1, 3)
        videos[i] = np.clip(video, 0.0, 1.0)
    return torch.from_numpy(videos).float()


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


def check_audio(clips: torch.Tensor, segments: int) -> None:
    """Clear errors for clips that cannot be cut into `segments` equal time segments or hold NaNs."""
    if clips.ndim != 3 or clips.shape[-1] != 1:
        raise ValueError(f"audio clips must have shape (n, length, 1), got {tuple(clips.shape)}")
    if clips.shape[1] % segments:
        raise ValueError(
            f"clip length {clips.shape[1]} does not split into segments={segments} equal segments"
        )
    if not torch.isfinite(clips).all():
        raise ValueError("audio clips contain NaN or infinite samples")


def check_video(videos: torch.Tensor, segments: int) -> None:
    """Clear errors for videos that cannot be cut into `segments` equal runs of frames or hold NaNs."""
    if videos.ndim != 5 or videos.shape[-1] != 3 or videos.shape[2] != videos.shape[3]:
        raise ValueError(f"videos must have shape (n, frames, H, H, 3), got {tuple(videos.shape)}")
    if videos.shape[1] % segments:
        raise ValueError(
            f"{videos.shape[1]} frames do not split into segments={segments} equal segments"
        )
    if not torch.isfinite(videos).all():
        raise ValueError("videos contain NaN or infinite pixels")


def segments_video(frames: int, size: int, segments: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(t, y, x) coordinates in [-1, 1]^3 and pixel indices grouped by module: coords (s, m, 3)
    and index (s, m) into the flattened frames*size*size video, module k owning the k-th run of
    frames / segments consecutive frames."""
    if frames % segments:
        raise ValueError(f"{frames} frames do not split into segments={segments} equal segments")
    tt, yy, xx = torch.meshgrid(
        torch.linspace(-1.0, 1.0, frames),
        torch.linspace(-1.0, 1.0, size),
        torch.linspace(-1.0, 1.0, size),
        indexing="ij",
    )
    coords = torch.stack([tt, xx, yy], dim=-1).reshape(-1, 3)
    index = torch.arange(frames * size * size).reshape(segments, -1)  # frame-major order
    return coords[index], index


def segments_1d(length: int, segments: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Time coordinates in [-1, 1] and sample indices grouped by module: coords (t, m, 1) and
    index (t, m) with t = segments consecutive segments of m = length / segments samples."""
    if length % segments:
        raise ValueError(
            f"clip length {length} does not split into segments={segments} equal segments"
        )
    index = torch.arange(length).reshape(segments, -1)
    return torch.linspace(-1.0, 1.0, length)[index].unsqueeze(-1), index


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
