"""The procedural renderer: deterministic, asymmetric, cameras consistent with the rays."""

from __future__ import annotations

import numpy as np
import pytest

from gst.data import BACKGROUND, make_pairs, random_object, render, sample_cameras
from gst.geometry import rays_to_camera, relative_pose


def test_pairs_are_deterministic_in_seed():
    a, b = make_pairs(6, 12, 2, seed=3), make_pairs(6, 12, 2, seed=3)
    assert np.array_equal(a.obs, b.obs) and np.array_equal(a.rotation, b.rotation)
    assert not np.array_equal(a.obs, make_pairs(6, 12, 2, seed=4).obs)


def test_objects_are_visible_and_views_differ():
    p = make_pairs(8, 16, 1, seed=0)
    covered = (np.abs(p.obs - BACKGROUND).sum(-1) > 1e-3).mean((1, 2))
    assert (covered > 0.05).all()
    assert np.abs(p.obs - p.tgt).mean() > 0.01


def test_rays_encode_the_relative_camera():
    p = make_pairs(4, 12, 1, seed=1)
    r, t = rays_to_camera(p.rays.astype(np.float64))
    assert np.allclose(r, p.rotation, atol=1e-4) and np.allclose(t, p.translation, atol=1e-3)


def test_bad_sizes_are_clear_errors():
    with pytest.raises(ValueError, match="n_objects"):
        make_pairs(4, 12, 0, seed=0)


def test_relative_rotation_is_target_times_observation_transpose():
    """R_rel = R_t R_o^T (camera frame of the observation, which is the identity): rendering the
    object from the observation camera composed with the relative pose gives the target view.
    The transposed convention R_o^T R_t would render a different image."""
    rng = np.random.default_rng(5)
    shapes = random_object(rng)
    r_o, t_o = sample_cameras(rng, 3)
    r_t, t_t = sample_cameras(rng, 3)
    r_rel, t_rel = relative_pose(r_o, t_o, r_t, t_t)
    composed_r = r_rel @ r_o
    composed_t = np.einsum("nij,nj->ni", r_rel, t_o) + t_rel
    target = render(shapes, r_t, t_t, 16)
    assert np.allclose(render(shapes, composed_r, composed_t, 16), target, atol=1e-6)
    wrong_r = np.swapaxes(r_o, -1, -2) @ r_t @ r_o
    assert np.abs(render(shapes, wrong_r, t_t, 16) - target).mean() > 0.01


def test_views_carry_the_rotation():
    """Views are informative: the same camera renders the same image, other cameras do not, and
    objects are off-centre (not a blob at the image centre)."""
    p = make_pairs(16, 16, 1, seed=2)
    mask = np.abs(p.obs - BACKGROUND).sum(-1) > 1e-3
    ys, xs = np.nonzero(mask.any(0))
    assert mask.mean() < 0.7 and len(set(xs)) > 4 and len(set(ys)) > 4
    diffs = np.abs(p.obs[:, None] - p.obs[None]).mean((2, 3, 4))
    assert (diffs[~np.eye(16, dtype=bool)] > 1e-3).all()


def _views(p, rows) -> set[bytes]:
    return {p.obs[i].tobytes() + p.tgt[i].tobytes() for i in rows}


def test_discrete_test_pairs_use_only_held_out_combinations():
    """A discrete camera set (--azimuths): the test pairs show only held-out (observation, target)
    camera combinations, all of them, and no training pair repeats one (a repeat would give the
    nearest-training-view floor and a memorising model an exact copy)."""
    n_train, n_test = 400, 40
    p = make_pairs(n_train + n_test, 8, 1, 0, azimuths=4, elevations=2, n_test=n_test)
    train, test = _views(p, range(n_train)), _views(p, range(n_train, n_train + n_test))
    assert len(test) == round(0.25 * 8**2) and len(train) == 8**2 - len(test)
    assert not train & test
    cameras = {p.obs[i].tobytes() for i in range(n_train + n_test)}
    assert len(cameras) == 8  # 4 azimuths x 2 elevations, distinct views of the one object


def test_continuous_cameras_are_the_default():
    """azimuths = 0 draws as before: the discrete-set arguments change nothing."""
    a = make_pairs(6, 12, 2, seed=3)
    b = make_pairs(6, 12, 2, seed=3, azimuths=0, elevations=3, holdout=0.5, n_test=2)
    assert np.array_equal(a.obs, b.obs) and np.array_equal(a.rotation, b.rotation)


def test_bad_camera_set_is_a_clear_error():
    with pytest.raises(ValueError, match="holdout"):
        make_pairs(8, 8, 1, seed=0, azimuths=4, holdout=1.0)
    with pytest.raises(ValueError, match="combinations"):
        make_pairs(8, 8, 1, seed=0, azimuths=1, elevations=1, n_test=2)
