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


def make_pairs(n: int, size: int, n_objects: int, seed: int) -> Pairs:
    """`n` pairs over `n_objects` random objects (drawn from `seed`), deterministic in `seed`."""
    if n < 1 or size < 2 or n_objects < 1:
        raise ValueError(f"need n >= 1, size >= 2, n_objects >= 1; got {n}, {size}, {n_objects}")
    rng = np.random.default_rng(seed)
    objects = [random_object(rng) for _ in range(n_objects)]
    obj = rng.integers(0, n_objects, n)
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
