"""Cameras <-> Pluecker rays, the ray-intersection centre and the geodesic metric."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from gst import geometry as geo
from gst.data import sample_cameras


def random_cameras(n: int, seed: int):
    rng = np.random.default_rng(seed)
    r = Rotation.random(n, random_state=seed).as_matrix()
    return r, rng.normal(size=(n, 3)) * 2.0


def test_round_trip_camera_rays_camera():
    r, t = random_cameras(16, 0)
    rays = geo.camera_to_rays(r, t, 12)
    m, d = rays[..., :3], rays[..., 3:]
    assert np.abs((m * d).sum(-1)).max() < 1e-12  # a Pluecker moment is orthogonal to d
    r2, t2 = geo.rays_to_camera(rays, damping=0.0)
    assert np.abs(r2 - r).max() < 1e-5 and np.abs(t2 - t).max() < 1e-5


def test_identity_camera_gives_reference_rays():
    rays = geo.camera_to_rays(np.eye(3), np.zeros(3), 8).reshape(-1, 6)
    assert np.allclose(rays[:, :3], 0.0)
    assert np.allclose(rays[:, 3:], geo.reference_directions(8))
    # the centre pixel ray of an even image is not the axis, but the central 4 are symmetric
    assert np.allclose(geo.reference_directions(8).mean(0)[:2], 0.0, atol=1e-12)


def test_least_squares_centre_of_known_rays():
    rng = np.random.default_rng(1)
    centre = np.array([0.3, -1.2, 2.5])
    d = rng.normal(size=(50, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    m = np.cross(centre, d)
    assert np.allclose(geo.ray_centre(m, d, damping=0.0), centre, atol=1e-10)
    # parallel rays: undamped is singular, damped stays finite
    d_par = np.tile([0.0, 0.0, 1.0], (10, 1))
    m_par = np.cross(centre + rng.normal(size=(10, 3)) * [1, 1, 0], d_par)
    assert np.isfinite(geo.ray_centre(m_par, d_par, damping=1e-3)).all()


def test_geodesic_angle_on_known_rotations():
    rz = Rotation.from_euler("z", 37, degrees=True).as_matrix()
    assert geo.geodesic_deg(rz, np.eye(3)) == pytest.approx(37.0)
    a, b = Rotation.random(20, random_state=2), Rotation.random(20, random_state=3)
    ref = np.rad2deg((a * b.inv()).magnitude())
    assert np.allclose(geo.geodesic_deg(a.as_matrix(), b.as_matrix()), ref, atol=1e-6)


def test_relative_pose_of_observation_is_identity():
    r, t = sample_cameras(np.random.default_rng(0), 4)
    rr, tr = geo.relative_pose(r, t, r, t)
    assert np.allclose(rr, np.eye(3)) and np.allclose(tr, 0.0, atol=1e-12)
    # look_at puts the origin straight ahead at distance 3
    assert np.allclose(np.einsum("nij,nj->ni", r, np.zeros((4, 3))) + t, [0, 0, 3.0])


@pytest.mark.parametrize(
    ("rotation", "message"),
    [
        (np.diag([1.0, 1.0, 1.5]), "not orthonormal"),
        (np.diag([1.0, 1.0, -1.0]), "reflection"),
        (np.eye(2), "shape"),
    ],
)
def test_bad_rotation_is_a_clear_error(rotation, message):
    with pytest.raises(ValueError, match=message):
        geo.camera_to_rays(rotation, np.zeros(3), 4)
