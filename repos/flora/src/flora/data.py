"""Data: synthetic weight-update targets, sklearn digits transfer tasks, and an image-folder loader.

Everything is a deterministic function of its seed; nothing is downloaded (digits ship with sklearn).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .adapter import tucker_delta

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")


def _orthonormal(d: int, r: int, g: torch.Generator) -> torch.Tensor:
    return torch.linalg.qr(torch.randn(d, r, generator=g))[0]


def _unit_rms(w: torch.Tensor) -> torch.Tensor:
    return w * math.sqrt(w.numel()) / w.norm()


def tucker_target(shape: tuple[int, ...], ranks: tuple[int, ...], seed: int) -> torch.Tensor:
    """A weight update with exact Tucker ranks `ranks` (Gaussian core, orthonormal factors), RMS 1."""
    g = torch.Generator().manual_seed(seed)
    core = torch.randn(ranks, generator=g)
    factors = [_orthonormal(d, r, g) for d, r in zip(shape, ranks)]
    return _unit_rms(tucker_delta(core, factors, 1.0))


def matrix_rank_target(shape: tuple[int, ...], rank: int, seed: int) -> torch.Tensor:
    """A weight update whose (out, in*k*...) reshaping has matrix rank `rank` (LoRA's structure), RMS 1."""
    g = torch.Generator().manual_seed(seed)
    out, rest = shape[0], math.prod(shape[1:])
    u, v = torch.randn(out, rank, generator=g), torch.randn(rest, rank, generator=g)
    return _unit_rms((u @ v.T).reshape(shape))


def _split(n: int, frac: float, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    perm = torch.randperm(n, generator=g)
    k = round(frac * n)
    return perm[:k], perm[k:]


def digits_tasks(seed: int, size: int = 8, channels: int = 1) -> dict[str, dict[str, torch.Tensor]]:
    """Pretraining on digits 0-4 and two transfer tasks, each with train/test tensors.

    pretrain: half of the 0-4 images. shift: digits 5-9 (labels 0-4), a new label space.
    rotated: the other half of 0-4, rotated by 90 degrees (same labels, shifted inputs).
    Each pool is split in half into train and test; a quarter of train is held out as the
    validation split the benchmark tunes on (the test split is never used for choices).
    Images are scaled to [0, 1], resized to `size` and repeated to `channels` channels.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)
    if size != 8:
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = x.repeat(1, channels, 1, 1)
    y = torch.tensor(digits.target, dtype=torch.long)
    g = torch.Generator().manual_seed(seed)
    low, high = torch.nonzero(y < 5).squeeze(1), torch.nonzero(y >= 5).squeeze(1)
    pre_idx, rot_idx = (low[i] for i in _split(len(low), 0.5, g))
    pools = {
        "pretrain": (x[pre_idx], y[pre_idx]),
        "shift": (x[high], y[high] - 5),
        "rotated": (torch.rot90(x[rot_idx], 1, dims=(2, 3)), y[rot_idx]),
    }
    tasks = {}
    for name, (xs, ys) in pools.items():
        tasks[name] = _train_val_test(xs, ys, 0.5, g)
    return tasks


def _train_val_test(
    x: torch.Tensor, y: torch.Tensor, train_frac: float, g: torch.Generator
) -> dict:
    tr, te = _split(len(y), train_frac, g)
    tr, va = (tr[i] for i in _split(len(tr), 0.75, g))
    return {"x_train": x[tr], "y_train": y[tr], "x_val": x[va], "y_val": y[va],
            "x_test": x[te], "y_test": y[te]}  # fmt: skip


def load_image_folder(root: str | Path, size: int) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Read root/<class>/<image> (the ImageFolder layout) as RGB tensors (n, 3, size, size) in [0, 1]."""
    from PIL import Image, UnidentifiedImageError

    root = Path(root)
    classes = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if not classes:
        raise ValueError(
            f"image folder {root} has no class sub-folders (expected root/<class>/*.png)"
        )
    xs, ys = [], []
    for label, name in enumerate(classes):
        for f in sorted((root / name).iterdir()):
            if f.suffix.lower() in IMAGE_SUFFIXES:
                try:
                    img = Image.open(f).convert("RGB").resize((size, size), Image.BILINEAR)
                except (OSError, UnidentifiedImageError) as exc:
                    raise ValueError(f"image file {f} cannot be read: {exc}") from None
                xs.append(
                    torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
                )
                ys.append(label)
    if len(set(ys)) < 2:
        raise ValueError(
            f"image folder {root} needs images in at least 2 classes, found {len(set(ys))}"
        )
    return torch.stack(xs), torch.tensor(ys), classes


def folder_task(root: str | Path, size: int, seed: int) -> dict[str, torch.Tensor]:
    x, y, _ = load_image_folder(root, size)
    return _train_val_test(x, y, 0.8, torch.Generator().manual_seed(seed))
