"""The multi-view folder reader (issue 72, point 4): the paper's kind of data, posed views of
objects, on a fixture the test writes; and the full preset end to end on it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from gst import train
from gst.config import PRESETS
from gst.geometry import geodesic_deg
from gst.views import load_pairs, read_object, write_fixture


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_fixture(tmp_path_factory.mktemp("views"), n_objects=4, n_views=5, size=16)


def test_pairs_carry_the_relative_camera_of_the_stored_views(folder):
    """Every pair is two views of one object; its rotation is R_target R_obs^T of the stored
    cameras (read in Blender axes and converted), so some stored pair must match it exactly."""
    pairs = load_pairs(folder, 12, 4, 16, seed=0, convention="blender")
    assert pairs.obs.shape == (16, 16, 16, 3) and pairs.rays.shape == (16, 16, 16, 6)
    objs = sorted(p for p in folder.iterdir())
    for n in range(16):
        images, rot, _ = read_object(objs[pairs.object_id[n]], 16, "blender")
        i = int(np.argmin(np.abs(images - pairs.obs[n]).sum((1, 2, 3))))
        j = int(np.argmin(np.abs(images - pairs.tgt[n]).sum((1, 2, 3))))
        assert i != j
        np.testing.assert_allclose(pairs.rotation[n], rot[j] @ rot[i].T, atol=1e-9)


def test_blender_axes_are_converted_to_opencv(tmp_path, folder):
    """The same scene written in OpenCV axes reads back the same; the Blender files read as if
    they were OpenCV give other relative rotations (the control)."""
    cv = write_fixture(tmp_path / "cv", n_objects=4, n_views=5, size=16, convention="opencv")
    a = load_pairs(folder, 12, 4, 16, seed=0, convention="blender")
    b = load_pairs(cv, 12, 4, 16, seed=0, convention="opencv")
    np.testing.assert_allclose(a.rotation, b.rotation, atol=1e-9)
    np.testing.assert_allclose(a.translation, b.translation, atol=1e-9)
    np.testing.assert_array_equal(a.obs, b.obs)
    wrong = load_pairs(folder, 12, 4, 16, seed=0, convention="opencv")
    assert geodesic_deg(wrong.rotation, a.rotation).max() > 1.0
    assert np.abs(wrong.translation - a.translation).max() > 1e-3


def test_test_pairs_show_held_out_objects(folder):
    pairs = load_pairs(folder, 40, 10, 16, seed=3, convention="blender")
    assert not set(pairs.object_id[:40]) & set(pairs.object_id[40:])
    again = load_pairs(folder, 40, 10, 16, seed=3, convention="blender")
    np.testing.assert_array_equal(pairs.tgt, again.tgt)


def test_bad_folders_are_one_line_errors_naming_the_file(tmp_path):
    with pytest.raises(ValueError, match="no such folder"):
        load_pairs(tmp_path / "missing", 4, 2, 16, 0)
    root = write_fixture(tmp_path / "v", n_objects=2, n_views=3, size=16)
    npy = root / "object_000" / "001.npy"
    np.save(npy, np.eye(3))
    with pytest.raises(ValueError, match=r"001\.npy: camera has shape \(3, 3\)"):
        load_pairs(root, 4, 2, 16, 0)
    np.save(npy, 2 * np.eye(4))
    with pytest.raises(ValueError, match=r"001\.npy: rotation is not orthonormal"):
        load_pairs(root, 4, 2, 16, 0)
    npy.unlink()
    with pytest.raises(ValueError, match=r"001\.npy: missing"):
        load_pairs(root, 4, 2, 16, 0)
    with pytest.raises(ValueError, match="camera convention"):
        load_pairs(root, 4, 2, 16, 0, convention="colmap")


def test_full_preset_on_a_multiview_folder_trains_and_reloads(tmp_path, folder):
    """The paper's experiment at tiny size on CPU: posed views from a folder, the VQ-VAE
    tokenizers, the joint model; eval rebuilds everything from config.json and the weights."""
    from conftest import TINY

    sizes = {**TINY, "image_codes": 8, "camera_codes": 8, "steps": 1, "pose_candidates": 4}
    sizes.update(device="cpu", image_size=16, grid=4, vq_steps=1, n_train=24, n_test=4)
    full = dataclasses.replace(
        PRESETS["full"], data_dir=str(folder), camera_convention="blender", **sizes
    )
    metrics = train.train_and_evaluate(full, tmp_path / "run", "gst")
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    train._prepare.cache_clear()
    assert train.evaluate(full, tmp_path / "run") == metrics


def test_eval_on_a_users_folder_uses_the_runs_model_and_tokenizers(tiny, tmp_path, folder):
    """`gst eval --out RUN --data-dir FOLDER`: the saved model on a user's posed views (read at
    the run's image size), not on the run's own test pairs; a broken folder is one line."""
    own = train.train_and_evaluate(tiny, tmp_path / "run", "pose_only")
    user = dataclasses.replace(tiny, data_dir=str(folder), camera_convention="blender")
    theirs = train.evaluate(user, tmp_path / "run")
    assert set(theirs) == set(own) and theirs != own
    assert all(math.isfinite(v) for v in theirs.values())
    with pytest.raises(ValueError, match="no such folder"):
        train.evaluate(dataclasses.replace(user, data_dir=str(tmp_path / "nope")), tmp_path / "run")
