"""Data: a linear teacher on Gaussian inputs (deterministic in the seed), sklearn's digits as the
MNIST stand-in, and a reader for MNIST idx files from a local copy. Nothing is downloaded."""

from __future__ import annotations

import gzip
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def linear_teacher(
    p: int, n0: int, n_test: int, seed: int, scale: float, noise: float
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """x ~ N(0, Id_N0); y = scale * (beta . x / sqrt(N0) + noise * xi). Returns X, Y, X_test."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((p + n_test, n0))
    beta = rng.standard_normal(n0)
    y = scale * (x[:p] @ beta / np.sqrt(n0) + noise * rng.standard_normal(p))
    return jnp.asarray(x[:p]), jnp.asarray(y), jnp.asarray(x[p:])


def normalise_rows(x: np.ndarray) -> np.ndarray:
    """Centre the pixels, then scale every image to |x|^2 = N0 (the kernels' convention)."""
    x = x - x.mean(axis=0, keepdims=True)
    return x * np.sqrt(x.shape[1]) / np.linalg.norm(x, axis=1, keepdims=True)


def image_regression(
    images: np.ndarray, labels: np.ndarray, p: int, n_test: int, seed: int, scale: float
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """A random subset of images; target scale * (+1 for even digits, -1 for odd), centred."""
    if np.isnan(images).any():
        raise ValueError("images contain NaN values; expected finite pixels")
    if p + n_test > len(images):
        raise ValueError(f"need p + n_test <= {len(images)} images, got {p + n_test}")
    idx = np.random.default_rng(seed).permutation(len(images))[: p + n_test]
    x = normalise_rows(images[idx].reshape(len(idx), -1).astype(np.float64))
    y = scale * np.where(labels[idx[:p]] % 2 == 0, 1.0, -1.0)
    return jnp.asarray(x[:p]), jnp.asarray(y - y.mean()), jnp.asarray(x[p:])


def load_digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 8x8 digits shipped inside scikit-learn (MNIST stand-in)."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return bunch.images.astype(np.float64), bunch.target.astype(np.int64)


def read_idx(path: str | Path) -> np.ndarray:
    """Read an MNIST idx file (optionally .gz): magic 0x0000 08 NDIM, big-endian dims, uint8 data."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            raw = fh.read()
    except (OSError, EOFError) as exc:  # missing, unreadable or a truncated/corrupt .gz
        raise ValueError(f"cannot read idx file {path}: {exc}") from exc
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte idx file (bad magic {raw[:4].hex()})")
    ndim = raw[3]
    if len(raw) < 4 + 4 * ndim:
        raise ValueError(f"{path}: truncated idx header ({len(raw)} bytes for {ndim} dimensions)")
    dims = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise ValueError(f"{path}: header says {dims} but holds {body.size} values")
    return body.reshape(dims)


def load_mnist(images_path: str | Path, labels_path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """MNIST from a local copy of train-images-idx3-ubyte(.gz) and train-labels-idx1-ubyte(.gz)."""
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        raise ValueError(
            f"expected N x H x W images in {images_path} and N labels in {labels_path}, "
            f"got {images.shape}, {labels.shape}"
        )
    return images.astype(np.float64), labels.astype(np.int64)
