"""The procedural renderer: deterministic, asymmetric, cameras consistent with the rays."""

from __future__ import annotations

import numpy as np
import pytest

from gst.data import BACKGROUND, make_pairs
from gst.geometry import rays_to_camera


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
