"""A multi-view folder of posed images (Objaverse-render / CO3D style), read into Pairs.

Layout: one sub-folder per object, each holding views `NAME.png` (RGB, or RGBA composited onto
the renderer's grey background) with `NAME.npy` beside it: the world-to-camera matrix [R | t]
(3x4, or 4x4 with last row 0 0 0 1), as the Zero-1-to-3 Objaverse renders store it. Axes are
OpenCV's (x right, y down, z forward) or, with convention "blender", OpenGL/Blender's (x right,
y up, z backward: the Objaverse renders), converted on reading. Images are square and are
resized to the preset's size; the field of view is the official 49.1 degrees (geometry.FOV_DEG).

Objects are split, not views: a seeded tenth of the objects (at least one) is held out, so the
test pairs show unseen objects, as in the paper's Objaverse view-synthesis protocol.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from .data import BACKGROUND, Pairs, random_object, render, sample_cameras
from .geometry import camera_to_rays, check_rotation, relative_pose

CONVENTIONS = ("opencv", "blender")
FLIP = np.diag([1.0, -1.0, -1.0])
"""OpenGL/Blender camera axes to OpenCV's (and back): y and z negated."""


def _read_image(path: Path, size: int) -> np.ndarray:
    try:
        img = Image.open(path)
        img.load()
    except OSError as exc:
        raise ValueError(f"{path}: not a readable image ({exc})") from None
    if img.width != img.height:
        raise ValueError(f"{path}: image is {img.width}x{img.height}, expected a square view")
    rgba = np.asarray(img.convert("RGBA").resize((size, size), Image.BILINEAR), np.float64) / 255
    alpha = rgba[..., 3:]
    return (rgba[..., :3] * alpha + BACKGROUND * (1 - alpha)).astype(np.float32)


def _read_pose(path: Path, convention: str) -> tuple[np.ndarray, np.ndarray]:
    if not path.exists():
        raise ValueError(f"{path}: missing (every view NAME.png needs its camera NAME.npy)")
    try:
        m = np.load(path, allow_pickle=False).astype(np.float64)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a numpy camera matrix ({exc})") from None
    if m.shape not in ((3, 4), (4, 4)):
        raise ValueError(f"{path}: camera has shape {m.shape}, expected world-to-camera 3x4 or 4x4")
    r, t = m[:3, :3], m[:3, 3]
    if convention == "blender":
        r, t = FLIP @ r, FLIP @ t
    try:
        check_rotation(r, atol=1e-3)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return r, t


def read_object(folder: Path, size: int, convention: str):
    """(images (V, S, S, 3), rotations (V, 3, 3), translations (V, 3)) of one object folder."""
    pngs = sorted(folder.glob("*.png"))
    if len(pngs) < 2:
        raise ValueError(f"{folder}: holds {len(pngs)} views (*.png), need at least 2")
    poses = [_read_pose(p.with_suffix(".npy"), convention) for p in pngs]
    images = np.stack([_read_image(p, size) for p in pngs])
    return images, np.stack([r for r, _ in poses]), np.stack([t for _, t in poses])


def object_folders(root: str | Path) -> list[Path]:
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root}: no such folder (--data-dir: a folder of object folders)")
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    if len(folders) < 2:
        raise ValueError(f"{root}: holds {len(folders)} object folders, need at least 2")
    return folders


def _pairs(objects: list, ids: np.ndarray, n: int, rng: np.random.Generator, size: int) -> Pairs:
    which = rng.choice(ids, n)
    obs, tgt, r_o, t_o, r_t, t_t = [], [], [], [], [], []
    for k in which:
        images, rot, trans = objects[k]
        i, j = rng.choice(len(images), 2, replace=False)
        obs.append(images[i])
        tgt.append(images[j])
        r_o.append(rot[i])
        t_o.append(trans[i])
        r_t.append(rot[j])
        t_t.append(trans[j])
    r_rel, t_rel = relative_pose(np.stack(r_o), np.stack(t_o), np.stack(r_t), np.stack(t_t))
    rays = camera_to_rays(r_rel, t_rel, size).astype(np.float32)
    return Pairs(np.stack(obs), np.stack(tgt), r_rel, t_rel, rays, which)


def load_pairs(
    root: str | Path, n_train: int, n_test: int, size: int, seed: int, convention: str = "opencv"
) -> Pairs:
    """n_train pairs of training objects then n_test pairs of held-out objects (seeded)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"camera convention must be one of {CONVENTIONS}, got {convention!r}")
    folders = object_folders(root)
    objects = [read_object(f, size, convention) for f in folders]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(folders))
    held = order[: max(1, len(folders) // 10)]
    kept = order[len(held) :]
    train = _pairs(objects, kept, n_train, rng, size)
    test = _pairs(objects, held, n_test, rng, size)
    both = [
        np.concatenate([getattr(train, f), getattr(test, f)]) for f in Pairs.__dataclass_fields__
    ]
    return Pairs(*both)


def write_fixture(
    root: str | Path,
    n_objects: int = 3,
    n_views: int = 6,
    size: int = 32,
    seed: int = 0,
    convention: str = "blender",
) -> Path:
    """A small multi-view folder in the layout above, rendered by the procedural renderer:
    RGBA PNGs (alpha 1) and world-to-camera matrices in `convention`'s axes."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    for k in range(n_objects):
        shapes = random_object(rng)
        rot, trans = sample_cameras(rng, n_views)
        images = render(shapes, rot, trans, size)
        folder = root / f"object_{k:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        for v in range(n_views):
            rgb = np.clip(np.round(images[v] * 255), 0, 255).astype(np.uint8)
            rgba = np.concatenate([rgb, np.full((size, size, 1), 255, np.uint8)], axis=-1)
            Image.fromarray(rgba, "RGBA").save(folder / f"{v:03d}.png")
            r, t = rot[v], trans[v]
            if convention == "blender":
                r, t = FLIP @ r, FLIP @ t
            np.save(folder / f"{v:03d}.npy", np.concatenate([r, t[:, None]], axis=1))
    return root


def load_eval_pairs(
    root: str | Path, n: int, size: int, seed: int, convention: str = "opencv"
) -> Pairs:
    """n pairs drawn from every object of a folder (a user's own views to evaluate on)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"camera convention must be one of {CONVENTIONS}, got {convention!r}")
    folders = object_folders(root)
    objects = [read_object(f, size, convention) for f in folders]
    rng = np.random.default_rng(seed)
    return _pairs(objects, np.arange(len(folders)), n, rng, size)
