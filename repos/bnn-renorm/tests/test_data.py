"""Data: deterministic generators and the MNIST idx loader on files the test writes."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from bnn_renorm import data


def write_idx(path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as fh:
        fh.write(header + array.astype(np.uint8).tobytes())


def test_mnist_idx_loader_round_trips_a_written_file(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(7, 28, 28))
    labels = rng.integers(0, 10, size=7)
    write_idx(tmp_path / "img.gz", images)
    write_idx(tmp_path / "lab.gz", labels)
    got_images, got_labels = data.load_mnist(tmp_path / "img.gz", tmp_path / "lab.gz")
    np.testing.assert_array_equal(got_images, images)
    np.testing.assert_array_equal(got_labels, labels)
    x, _, _ = data.image_regression(got_images, got_labels, 4, 2, seed=0, scale=1.0)
    np.testing.assert_allclose(np.sum(np.asarray(x) ** 2, axis=1), 784.0)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="bad magic"):
        data.read_idx(tmp_path / "bad")


def test_generators_are_deterministic_in_the_seed():
    a, b = data.linear_teacher(5, 3, 2, 7, 1.0, 0.1), data.linear_teacher(5, 3, 2, 7, 1.0, 0.1)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not np.array_equal(a[0], data.linear_teacher(5, 3, 2, 8, 1.0, 0.1)[0])


def test_nan_images_are_rejected():
    images, labels = data.load_digits_arrays()
    images[3, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        data.image_regression(images, labels, 10, 2, seed=0, scale=1.0)


def test_test_inputs_are_disjoint_from_the_training_inputs():
    """Predictive variances are measured at fresh inputs: no test row is a training row."""
    images, labels = data.load_digits_arrays()
    for x, _, x_test in (
        data.linear_teacher(20, 5, 6, 0, 1.0, 0.1),
        data.image_regression(images, labels, 20, 6, seed=0, scale=1.0),
    ):
        x, x_test = np.asarray(x), np.asarray(x_test)
        assert x_test.shape[0] == 6
        assert not (x_test[:, None, :] == x[None, :, :]).all(-1).any()
