"""Signals and their split into sub-tasks: procedural images, 1-D audio chirps, short videos and
toy NeRF scenes (deterministic in the seed), an image-folder loader for local datasets, and the
fixed partitions (image blocks, time segments, city blocks) that route each coordinate or ray to
exactly one module (paper: one module per region or time segment, as in Mega-NeRF / Switch-NeRF;
one per city block for MatrixCity)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .nerf import composite, ray_points

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


# scikit-image's bundled RGB photographs (no download): the paper preset's real images. The
# stereo pair's right view is left out (a near copy of the left one would leak across the split).
SKIMAGE_PHOTOS = (
    "astronaut",
    "chelsea",
    "coffee",
    "hubble_deep_field",
    "immunohistochemistry",
    "motorcycle",
    "retina",
    "rocket",
)


def write_skimage_photos(folder: str | Path) -> list[Path]:
    """Write scikit-image's bundled RGB photographs into folder as PNG; return their paths."""
    from PIL import Image
    from skimage import data as skdata

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in SKIMAGE_PHOTOS:
        pixels = skdata.stereo_motorcycle()[0] if name == "motorcycle" else getattr(skdata, name)()
        paths.append(folder / f"{name}.png")
        Image.fromarray(pixels).save(paths[-1])
    return paths


def load_image_folder(folder: str | Path, size: int, limit: int | None = None) -> torch.Tensor:
    """RGB images of a local folder (PNG/JPEG, e.g. CelebA), centre-cropped and resized to size,
    in file-name order. A missing folder or an unreadable image is a ValueError naming it; images
    that were not RGB (grey, palette, RGBA) or smaller than size are named on stderr."""
    from PIL import Image

    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(
            f"image folder {folder} does not exist (`mcl-nf photos --out {folder}` writes "
            "scikit-image's sample photographs there)"
        )
    paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise ValueError(f"no {'/'.join(IMAGE_SUFFIXES)} images in {folder}")
    images, converted, upscaled = [], [], []
    for path in paths[:limit]:
        try:
            img = Image.open(path)
            if img.mode != "RGB":
                converted.append(f"{path.name} ({img.mode})")
            img = img.convert("RGB")
        except (OSError, SyntaxError, ValueError) as exc:  # PIL's errors for corrupt files
            raise ValueError(f"cannot read image {path}: {exc}") from None
        side = min(img.size)
        if side < size:
            upscaled.append(f"{path.name} ({img.width}x{img.height})")
        left, top = (img.width - side) // 2, (img.height - side) // 2
        img = img.crop((left, top, left + side, top + side)).resize((size, size), Image.BILINEAR)
        images.append(np.asarray(img, dtype=np.float32) / 255.0)
    for what, names in (("converted to RGB", converted), (f"upscaled to {size}x{size}", upscaled)):
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            print(f"mcl-nf: {len(names)} image(s) in {folder} {what}: {shown}", file=sys.stderr)
    return torch.from_numpy(np.stack(images))


def held_out_split(count: int, held: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices (sorted) of the `held` held-out images and of the training images among `count`
    files in name order: a random choice fixed by the seed, so every seed holds out its own."""
    order = torch.randperm(count, generator=torch.Generator().manual_seed(seed))
    return order[:held].sort().values, order[held:].sort().values


def random_crops(images: torch.Tensor, n: int, size: int, seed: int) -> torch.Tensor:
    """n random size x size crops of images (k, S, S, 3), each of a random image: (n, size, size, 3)."""
    gen = torch.Generator().manual_seed(seed)
    which = torch.randint(len(images), (n,), generator=gen)
    top, left = torch.randint(images.shape[1] - size + 1, (2, n), generator=gen)
    return torch.stack([images[w, t : t + size, s : s + size] for w, t, s in zip(which, top, left)])


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


# Toy city for the NeRF family. The city covers [-1, 1]^2 in (x, z), y is up, and is cut into
# grid x grid blocks of side b = 2 / grid (raster order, rows along z); everything scales with b.
CAMERA_DISTANCE = 2.2
"""Camera distance from its block's look-at point, in block sides."""
FOV_DEGREES = 40.0
"""Full field of view of the square pinhole cameras."""
RAY_BOUNDS = (-1.2, 1.5)
"""near / far of every ray relative to CAMERA_DISTANCE, in block sides."""
SCENE_DENSITY = 40.0
"""Density inside objects and the ground, per block side (opaque within a few samples)."""


def camera_rays(
    position: torch.Tensor, look_at: torch.Tensor, resolution: int, fov_degrees: float
) -> torch.Tensor:
    """Pinhole camera at `position` looking at `look_at` (y up): one ray (origin, unit direction)
    through each pixel centre, row-major from the top-left, shape (resolution^2, 6)."""
    forward = F.normalize(look_at - position, dim=-1)
    right = F.normalize(
        torch.linalg.cross(forward, torch.tensor([0.0, 1.0, 0.0]).to(forward)), dim=-1
    )
    up = torch.linalg.cross(right, forward)
    ax = (torch.arange(resolution, dtype=forward.dtype) + 0.5) / resolution * 2 - 1
    v, u = torch.meshgrid(-ax, ax, indexing="ij")
    half = np.tan(np.radians(fov_degrees) / 2)
    dirs = forward + half * (u[..., None] * right + v[..., None] * up)
    dirs = F.normalize(dirs.reshape(-1, 3), dim=-1)
    return torch.cat([position.expand_as(dirs), dirs], -1)


def block_centres(grid: int) -> torch.Tensor:
    """(x, z) centres of the grid x grid city blocks in raster order: (grid^2, 2)."""
    side = 2.0 / grid
    centre = -1 + (torch.arange(grid) + 0.5) * side
    zz, xx = torch.meshgrid(centre, centre, indexing="ij")
    return torch.stack([xx, zz], -1).reshape(-1, 2)


def look_at_points(grid: int) -> torch.Tensor:
    """Where every block's cameras look: its centre, a quarter block up. (grid^2, 3)."""
    centres = block_centres(grid)
    return torch.stack([centres[:, 0], torch.full((grid * grid,), 0.5 / grid), centres[:, 1]], -1)


def camera_poses(grid: int, views: int, test_views: int) -> torch.Tensor:
    """Camera positions, (grid^2, views + test_views, 3): for every block, cameras on a sphere of
    radius CAMERA_DISTANCE blocks around its look-at point (block centre, a quarter block up).
    Training views sit at evenly spaced azimuths, elevation alternating 35 / 55 degrees; held-out
    views at 45 degrees, at azimuths between the training views."""
    side = 2.0 / grid
    az = [2 * np.pi * j / views + 0.3 for j in range(views)]
    az += [2 * np.pi * j / test_views + 0.3 + np.pi / views for j in range(test_views)]
    el = [45.0 if views == 1 else (35.0, 55.0)[j % 2] for j in range(views)] + [45.0] * test_views
    az_t, el_t = torch.tensor(az), torch.deg2rad(torch.tensor(el))
    unit = torch.stack([el_t.cos() * az_t.cos(), el_t.sin(), el_t.cos() * az_t.sin()], -1)
    return look_at_points(grid)[:, None] + unit[None] * (CAMERA_DISTANCE * side)


def city_rays(
    grid: int, resolution: int, views: int, test_views: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rays grouped by module: rays (t, m, 8) = (origin, direction, near, far) and index (t, m)
    into the flattened (t, views + test_views, resolution, resolution) pixels, module k owning
    every ray of block k's cameras (training views first, then the held-out views)."""
    side = 2.0 / grid
    poses, look_at = camera_poses(grid, views, test_views), look_at_points(grid)
    near, far = ((CAMERA_DISTANCE + b) * side for b in RAY_BOUNDS)
    rays = []
    for k in range(grid * grid):
        block = torch.cat([camera_rays(p, look_at[k], resolution, FOV_DEGREES) for p in poses[k]])
        rays.append(torch.cat([block, torch.tensor([near, far]).expand(len(block), 2)], -1))
    rays_t = torch.stack(rays)
    return rays_t, torch.arange(rays_t.shape[0] * rays_t.shape[1]).reshape(rays_t.shape[:2])


def procedural_scenes(n: int, grid: int, seed: int) -> dict[str, torch.Tensor]:
    """n toy cities: per block a ground tint and one or two objects (a sphere resting on the
    ground or a box "building"), each with a random size, position inside its block and colour.
    Objects as arrays (n, 2 grid^2, ...): centre, half-size, colour, is_box, present."""
    rng = np.random.default_rng(seed)
    side, blocks = 2.0 / grid, grid * grid
    centres = block_centres(grid).numpy()
    k = 2 * blocks
    centre, half = np.zeros((n, k, 3)), np.zeros((n, k, 3))
    is_box, present = rng.random((n, k)) < 0.5, np.ones((n, k), dtype=bool)
    present[:, 1::2] = rng.random((n, blocks)) < 0.6  # second object of a block is optional
    for o in range(k):
        cx, cz = centres[o // 2]
        xz = rng.uniform(-0.25, 0.25, (n, 2)) * side + [cx, cz]
        radius = rng.uniform(0.12, 0.22, n) * side
        box = (
            np.stack(
                [rng.uniform(0.08, 0.18, n), rng.uniform(0.1, 0.3, n), rng.uniform(0.08, 0.18, n)],
                -1,
            )
            * side
        )
        half[:, o] = np.where(is_box[:, o, None], box, radius[:, None])
        centre[:, o] = np.stack([xz[:, 0], half[:, o, 1], xz[:, 1]], -1)
    arrays = {
        "centre": centre,
        "half": half,
        "colour": rng.uniform(0.1, 0.9, (n, k, 3)),
        "is_box": is_box,
        "present": present,
        "ground": 0.35 + 0.3 * rng.random((n, blocks, 3)),
    }
    return {name: torch.as_tensor(v, dtype=torch.float32) for name, v in arrays.items()}


def scene_field(
    scene: dict[str, torch.Tensor], points: torch.Tensor, grid: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Analytic density and colour of one scene at points (P, 3): soft spheres, boxes and a
    ground slab (y < 0, tinted per block), colour the density-weighted mix of what is there."""
    side = 2.0 / grid
    soft, peak = 0.02 * side, SCENE_DENSITY / side
    d = points[:, None, :] - scene["centre"][None]
    sphere = scene["half"][None, :, 0] - d.norm(dim=-1)
    box = (scene["half"][None] - d.abs()).min(-1).values
    inside = torch.where(scene["is_box"].bool()[None], box, sphere)
    dens = peak * torch.sigmoid(inside / soft) * scene["present"][None]
    ground = peak * torch.sigmoid(-points[:, 1] / soft)
    col = ((points[:, [2, 0]] + 1) / side).floor().clamp(0, grid - 1).long()
    ground_rgb = scene["ground"][col[:, 0] * grid + col[:, 1]]
    sigma = dens.sum(-1) + ground
    rgb = (dens @ scene["colour"] + ground[:, None] * ground_rgb) / sigma.clamp_min(1e-6)[:, None]
    return sigma, rgb


def render_scenes(
    scenes: dict[str, torch.Tensor], rays: torch.Tensor, samples: int, grid: int, chunk: int = 4096
) -> torch.Tensor:
    """Ground-truth pixels of every scene along rays (N, 8): the analytic field at the same
    `samples` bin midpoints and the same compositing as `nerf.NerfField`. Returns (n, N, 3)."""
    out = []
    for i in range(len(scenes["centre"])):
        scene = {k: v[i].to(rays.device) for k, v in scenes.items()}
        pixels = []
        for part in rays.split(chunk):
            points, delta = ray_points(part, samples)
            sigma, rgb = scene_field(scene, points.reshape(-1, 3), grid)
            pixels.append(
                composite(
                    sigma.reshape(len(part), samples), rgb.reshape(len(part), samples, 3), delta
                )
            )
        out.append(torch.cat(pixels))
    return torch.stack(out)


def procedural_cities(
    n: int,
    grid: int,
    resolution: int,
    views: int,
    test_views: int,
    samples: int,
    seed: int,
    device: str = "cpu",
) -> torch.Tensor:
    """n toy-city NeRF signals: every block's views rendered from `procedural_scenes`, shape
    (n, grid^2, views + test_views, resolution, resolution, 3), in [0, 1]."""
    rays, _ = city_rays(grid, resolution, views, test_views)
    pixels = render_scenes(
        procedural_scenes(n, grid, seed), rays.reshape(-1, 8).to(device), samples, grid
    )
    return pixels.reshape(n, grid * grid, views + test_views, resolution, resolution, 3)


def check_nerf(views: torch.Tensor, grid: int) -> None:
    """Clear errors for NeRF signals that are not grid^2 blocks of square RGB views or hold NaNs."""
    if views.ndim != 6 or views.shape[-1] != 3 or views.shape[3] != views.shape[4]:
        raise ValueError(
            f"NeRF signals must have shape (n, blocks, views, H, H, 3), got {tuple(views.shape)}"
        )
    if views.shape[1] != grid * grid:
        raise ValueError(
            f"NeRF signals hold {views.shape[1]} blocks, expected grid^2 = {grid * grid}"
        )
    if not torch.isfinite(views).all():
        raise ValueError("NeRF signals contain NaN or infinite pixels")
