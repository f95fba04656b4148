"""Procedural scenes, deterministic in the seed: asymmetric multi-primitive objects seen from
cameras on a sphere, rendered by analytic ray casting with Lambertian shading (numpy).

Each object has 3-5 spheres and boxes of distinct colours, so that its pose is unambiguous.
A pair is (observation image, target image, target camera relative to the observation).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .geometry import camera_to_rays, look_at, reference_directions, relative_pose

PALETTE = np.array(
    [
        [0.90, 0.10, 0.10],
        [0.10, 0.70, 0.20],
        [0.15, 0.30, 0.95],
        [0.95, 0.80, 0.10],
        [0.80, 0.20, 0.85],
        [0.10, 0.80, 0.85],
        [0.95, 0.50, 0.10],
    ]
)
BACKGROUND = np.array([0.55, 0.55, 0.55])
LIGHT = np.array([0.4, -0.3, 0.85]) / np.linalg.norm([0.4, -0.3, 0.85])


@dataclasses.dataclass(frozen=True)
class Shape:
    """One primitive: kind 0 sphere (size[0] = radius) or 1 axis-aligned box (half sizes)."""

    kind: int
    centre: tuple[float, float, float]
    size: tuple[float, float, float]
    colour: tuple[float, float, float]


def random_object(rng: np.random.Generator) -> list[Shape]:
    """3-5 primitives with distinct colours, placed off-centre so no symmetry survives."""
    n = int(rng.integers(3, 6))
    colours = rng.choice(len(PALETTE), size=n, replace=False)
    shapes = []
    for i in range(n):
        centre = rng.uniform(-0.7, 0.7, size=3)
        if rng.random() < 0.5:
            r = float(rng.uniform(0.25, 0.45))
            size = (r, r, r)
        else:
            size = tuple(float(s) for s in rng.uniform(0.15, 0.45, size=3))
        shapes.append(
            Shape(
                int(i % 2 if i < 2 else rng.integers(2)),
                tuple(centre),
                size,
                tuple(PALETTE[colours[i]]),
            )
        )
    return shapes


def _hit_sphere(o, d, c, r):
    oc = o - c
    b = np.einsum("...i,...i->...", oc, d)
    disc = b * b - (np.einsum("...i,...i->...", oc, oc) - r * r)
    t = -b - np.sqrt(np.maximum(disc, 0.0))
    hit = (disc > 0) & (t > 1e-4)
    normal = o + np.where(hit, t, 0.0)[..., None] * d - c
    t = np.where(hit, t, np.inf)
    return t, normal / np.maximum(np.linalg.norm(normal, axis=-1, keepdims=True), 1e-9)


def _hit_box(o, d, c, h):
    inv = 1.0 / np.where(np.abs(d) < 1e-12, 1e-12, d)
    t0, t1 = (c - h - o) * inv, (c + h - o) * inv
    tmin, tmax = np.minimum(t0, t1), np.maximum(t0, t1)
    t_near, t_far = tmin.max(-1), tmax.min(-1)
    t = np.where((t_near <= t_far) & (t_near > 1e-4), t_near, np.inf)
    axis = tmin.argmax(-1)
    normal = -np.sign(d) * np.eye(3)[axis]
    return t, normal


def render(shapes: list[Shape], rotation: np.ndarray, t: np.ndarray, size: int) -> np.ndarray:
    """Render (N, size, size, 3) images in [0, 1] for N world-to-camera poses."""
    centre = -np.einsum("nji,nj->ni", rotation, t)
    dirs = np.einsum("nji,pj->npi", rotation, reference_directions(size))
    origin = np.broadcast_to(centre[:, None, :], dirs.shape)
    depth = np.full(dirs.shape[:2], np.inf)
    colour = np.broadcast_to(BACKGROUND, dirs.shape).copy()
    for s in shapes:
        c, h = np.asarray(s.centre), np.asarray(s.size)
        if s.kind == 0:
            hit_t, normal = _hit_sphere(origin, dirs, c, h[0])
        else:
            hit_t, normal = _hit_box(origin, dirs, c, h)
        closer = hit_t < depth
        shade = 0.3 + 0.7 * np.clip(normal @ LIGHT, 0.0, 1.0)
        colour[closer] = (shade[..., None] * np.asarray(s.colour))[closer]
        depth = np.where(closer, hit_t, depth)
    return colour.reshape(len(rotation), size, size, 3)


def sample_cameras(rng: np.random.Generator, n: int, radius: float = 3.0):
    """Cameras on a sphere: azimuth uniform, elevation in [-30, 60] degrees, looking at 0."""
    az = rng.uniform(0.0, 2 * np.pi, n)
    el = np.deg2rad(rng.uniform(-30.0, 60.0, n))
    centre = radius * np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], -1)
    return look_at(centre)


@dataclasses.dataclass(frozen=True)
class Pairs:
    """Observation/target pairs; cameras relative to the observation camera."""

    obs: np.ndarray  # (N, S, S, 3) float32 in [0, 1]
    tgt: np.ndarray  # (N, S, S, 3)
    rotation: np.ndarray  # (N, 3, 3) relative rotation
    translation: np.ndarray  # (N, 3) relative translation
    rays: np.ndarray  # (N, S, S, 6) Pluecker map of the relative camera
    object_id: np.ndarray  # (N,)


def camera_grid(azimuths: int, elevations: int, radius: float = 3.0):
    """A discrete camera set: `azimuths` evenly spaced azimuths (from 0) on each of `elevations`
    rings at the bin centres of [-30, 60] degrees (one ring: 15 degrees), looking at 0."""
    el = np.deg2rad(-30.0 + 90.0 * (np.arange(elevations) + 0.5) / elevations)
    az = 2 * np.pi * np.arange(azimuths) / azimuths
    el, az = np.repeat(el, azimuths), np.tile(az, elevations)
    centre = radius * np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], -1)
    return look_at(centre)


def split_combinations(rng: np.random.Generator, n_cameras: int, holdout: float):
    """(training, held-out) (observation, target) camera index pairs: a seeded `holdout` fraction
    of the n_cameras^2 combinations is kept for the test pairs (at least one on each side)."""
    combos = np.stack(np.meshgrid(np.arange(n_cameras), np.arange(n_cameras), indexing="ij"), -1)
    combos = combos.reshape(-1, 2)[rng.permutation(n_cameras**2)]
    k = min(max(1, round(holdout * len(combos))), len(combos) - 1)
    if k < 1:
        raise ValueError(f"a discrete camera set needs >= 2 combinations, got {len(combos)}")
    return combos[k:], combos[:k]


def make_pairs(
    n: int,
    size: int,
    n_objects: int,
    seed: int,
    azimuths: int = 0,
    elevations: int = 1,
    holdout: float = 0.25,
    n_test: int = 0,
) -> Pairs:
    """`n` pairs over `n_objects` random objects (drawn from `seed`), deterministic in `seed`.

    azimuths = 0: both cameras of a pair anywhere on the sphere (`sample_cameras`). azimuths > 0:
    cameras from the grid `camera_grid(azimuths, elevations)`; the last `n_test` pairs use only
    held-out (observation, target) camera combinations (`split_combinations`), cycled in a seeded
    order, and the first n - n_test only the others, so that no test pair's view repeats a
    training pair's (a copy would give the nearest-training-view floor an exact answer)."""
    if n < 1 or size < 2 or n_objects < 1:
        raise ValueError(f"need n >= 1, size >= 2, n_objects >= 1; got {n}, {size}, {n_objects}")
    if azimuths < 0 or elevations < 1 or not 0 < holdout < 1 or not 0 <= n_test <= n:
        raise ValueError(
            f"need azimuths >= 0, elevations >= 1, 0 < holdout < 1, 0 <= n_test <= n; got "
            f"{azimuths}, {elevations}, {holdout}, {n_test}"
        )
    rng = np.random.default_rng(seed)
    objects = [random_object(rng) for _ in range(n_objects)]
    obj = rng.integers(0, n_objects, n)
    if azimuths:
        r_grid, t_grid = camera_grid(azimuths, elevations)
        train, test = split_combinations(rng, len(r_grid), holdout)
        pick = np.concatenate(
            [train[rng.integers(0, len(train), n - n_test)], test[np.arange(n_test) % len(test)]]
        )
        r_o, t_o = r_grid[pick[:, 0]], t_grid[pick[:, 0]]
        r_t, t_t = r_grid[pick[:, 1]], t_grid[pick[:, 1]]
    else:
        r_o, t_o = sample_cameras(rng, n)
        r_t, t_t = sample_cameras(rng, n)
    obs = np.empty((n, size, size, 3))
    tgt = np.empty((n, size, size, 3))
    for k, shapes in enumerate(objects):
        idx = np.flatnonzero(obj == k)
        if idx.size:
            obs[idx] = render(shapes, r_o[idx], t_o[idx], size)
            tgt[idx] = render(shapes, r_t[idx], t_t[idx], size)
    r_rel, t_rel = relative_pose(r_o, t_o, r_t, t_t)
    rays = camera_to_rays(r_rel, t_rel, size)
    return Pairs(
        obs.astype(np.float32),
        tgt.astype(np.float32),
        r_rel,
        t_rel,
        rays.astype(np.float32),
        obj,
    )
