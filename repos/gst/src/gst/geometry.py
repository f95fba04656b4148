"""Cameras as Pluecker ray maps and back (official `utils/ray_utils.py`, written from its facts).

Conventions: OpenCV axes (x right, y down, z forward), world-to-camera `x_cam = R x_world + t`,
camera centre `C = -R^T t`, pixel centres at `u + 0.5`, principal point at the image centre,
vertical field of view 49.1 degrees. A ray map has six channels: moment `m = C x d` (0-2)
then unit direction `d` (3-5). Cameras are expressed relative to the observation camera,
which is therefore the identity.
"""

from __future__ import annotations

import numpy as np

FOV_DEG = 49.1


def check_rotation(rotation: np.ndarray, atol: float = 1e-4) -> np.ndarray:
    """Return `rotation` as float64 (..., 3, 3) or raise ValueError if it is not in SO(3)."""
    r = np.asarray(rotation, dtype=np.float64)
    if r.shape[-2:] != (3, 3):
        raise ValueError(f"a rotation must have shape (..., 3, 3), got {r.shape}")
    gram_err = np.abs(np.swapaxes(r, -1, -2) @ r - np.eye(3)).max()
    if gram_err > atol:
        raise ValueError(f"rotation is not orthonormal: max |R^T R - I| = {gram_err:.3g} > {atol}")
    if (np.linalg.det(r) <= 0).any():
        raise ValueError("rotation has determinant <= 0 (a reflection), expected +1")
    return r


def intrinsics(size: int, fov_deg: float = FOV_DEG) -> np.ndarray:
    """Pinhole K for a square `size` x `size` image with the given vertical field of view."""
    f = 0.5 * size / np.tan(0.5 * np.deg2rad(fov_deg))
    return np.array([[f, 0.0, size / 2], [0.0, f, size / 2], [0.0, 0.0, 1.0]])


def reference_directions(size: int, fov_deg: float = FOV_DEG) -> np.ndarray:
    """Unit ray directions of the identity camera, shape (size*size, 3), row-major pixels."""
    v, u = np.meshgrid(np.arange(size) + 0.5, np.arange(size) + 0.5, indexing="ij")
    pix = np.stack([u.ravel(), v.ravel(), np.ones(size * size)], axis=-1)
    d = pix @ np.linalg.inv(intrinsics(size, fov_deg)).T
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def look_at(centre: np.ndarray, target: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """World-to-camera (R, t) of cameras at `centre` (..., 3) looking at `target`, world up +z."""
    centre = np.asarray(centre, dtype=np.float64)
    target = np.zeros_like(centre) if target is None else target
    fwd = target - centre
    fwd /= np.linalg.norm(fwd, axis=-1, keepdims=True)
    right = np.cross(fwd, np.broadcast_to([0.0, 0.0, 1.0], fwd.shape))
    right /= np.linalg.norm(right, axis=-1, keepdims=True)
    down = np.cross(fwd, right)
    r = np.stack([right, down, fwd], axis=-2)
    t = -np.einsum("...ij,...j->...i", r, centre)
    return r, t


def relative_pose(r_obs, t_obs, r_tgt, t_tgt) -> tuple[np.ndarray, np.ndarray]:
    """Target camera in the observation camera's frame: R = R_t R_o^T, t = t_t - R t_o."""
    r = r_tgt @ np.swapaxes(r_obs, -1, -2)
    return r, t_tgt - np.einsum("...ij,...j->...i", r, t_obs)


def camera_to_rays(rotation: np.ndarray, t: np.ndarray, size: int) -> np.ndarray:
    """Pluecker map (..., size, size, 6) = (m, d) with d = R^T K^-1 p / |.| and m = C x d."""
    r = check_rotation(rotation)
    t = np.asarray(t, dtype=np.float64)
    centre = -np.einsum("...ji,...j->...i", r, t)
    d = np.einsum("...ji,pj->...pi", r, reference_directions(size))
    m = np.cross(centre[..., None, :], d)
    rays = np.concatenate([m, d], axis=-1)
    return rays.reshape(*rays.shape[:-2], size, size, 6)


def ray_centre(m: np.ndarray, d: np.ndarray, damping: float = 1e-6) -> np.ndarray:
    """Damped least-squares intersection of rays: argmin_C sum |(I - dd^T)(C - d x m)|^2.

    `m`, `d`: (..., P, 3). The damping `damping * P * I` keeps near-parallel rays solvable.
    """
    d = d / np.linalg.norm(d, axis=-1, keepdims=True)
    p0 = np.cross(d, m)  # the point of each ray nearest the origin
    proj = np.eye(3) - d[..., :, None] * d[..., None, :]
    a = proj.sum(-3) + damping * d.shape[-2] * np.eye(3)
    b = np.einsum("...pij,...pj->...i", proj, p0)
    return np.linalg.solve(a, b[..., None])[..., 0]


def rays_to_camera(rays: np.ndarray, damping: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Recover (R, t) from a Pluecker map (..., S, S, 6): centre by damped least squares,
    rotation by Procrustes alignment of the reference directions to the predicted ones."""
    size = rays.shape[-2]
    flat = rays.reshape(*rays.shape[:-3], size * size, 6)
    m, d = flat[..., :3], flat[..., 3:]
    d = d / np.maximum(np.linalg.norm(d, axis=-1, keepdims=True), 1e-12)
    centre = ray_centre(m, d, damping)
    ref = reference_directions(size)
    # world d = R^T ref: maximise tr(R^T^T ...) -> Procrustes on M = sum d ref^T
    mat = np.einsum("...pi,pj->...ij", d, ref)
    u, _, vt = np.linalg.svd(mat)
    sign = np.sign(np.linalg.det(u @ vt))
    fix = np.ones((*sign.shape, 3))
    fix[..., 2] = sign
    r_transposed = (u * fix[..., None, :]) @ vt
    r = np.swapaxes(r_transposed, -1, -2)
    return r, -np.einsum("...ij,...j->...i", r, centre)


def camera_centre(rotation: np.ndarray, t: np.ndarray) -> np.ndarray:
    return -np.einsum("...ji,...j->...i", rotation, t)


def geodesic_deg(r_a: np.ndarray, r_b: np.ndarray) -> np.ndarray:
    """Angle of R_a R_b^T in degrees: arccos((tr - 1) / 2), clipped for round-off."""
    tr = np.einsum("...ij,...ij->...", r_a, r_b)
    return np.rad2deg(np.arccos(np.clip((tr - 1.0) / 2.0, -1.0, 1.0)))
