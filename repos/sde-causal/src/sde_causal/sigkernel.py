"""The signature kernel as the solution of a Goursat PDE (paper Sec. 4; Salvi et al. 2021).

`k(x, y) = <S(x), S(y)>` solves `d^2 K / ds dt = <x'(s), y'(t)> K` with `K = 1` on both axes.
With a static kernel kappa the integrand `<dx, dy>` becomes the second difference of kappa on
the observation grid.

Two solvers of the same scheme:
- `pysiglib_gram`: pysiglib's C++ finite-difference solver, what the CI test uses;
- `gram` / `signature_kernel`: our numpy reference (float64, vectorised over all pairs of a
  block, swept along anti-diagonals), against which the tests check pysiglib and closed forms.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import pdist

# Pairs of paths solved at once; bounds the (pairs, n1 + 1, n2 + 1) grid held in memory.
_PAIRS_PER_BLOCK = 4096
# pysiglib solves max_batch^2 pairs per call; its static kernel materialises a
# (pairs, L - 1, L - 1) tensor per call, so small chunks stay in cache. Measured on this
# machine (400 paths, 21 points, refinement 1): 7.2 s unchunked, 2.4 s at 32, 3.5 s at 8.
_PYSIGLIB_MAX_BATCH = 32


def check_paths(paths: np.ndarray, name: str = "paths") -> np.ndarray:
    """Return `paths` as float64 (batch, length, channels), or raise a ValueError naming the problem."""
    arr = np.asarray(paths, dtype=np.float64)
    if arr.ndim != 3:
        raise ValueError(f"{name} must have shape (batch, length, channels), got shape {arr.shape}")
    if arr.shape[1] < 2:
        raise ValueError(f"{name} needs at least 2 time points per path, got {arr.shape[1]}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values; drop or impute them first")
    return arr


def add_time(paths: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Time augmentation `x -> (x_t, t)`; `times` is (length,) or (batch, length)."""
    paths = check_paths(paths)
    t = np.broadcast_to(np.asarray(times, dtype=np.float64), paths.shape[:2])
    return np.concatenate([paths, t[..., None]], axis=-1)


def median_bandwidth(*path_sets: np.ndarray, max_points: int = 500, seed: int = 0) -> float:
    """Median heuristic: median Euclidean distance between observed points of all paths."""
    pts = np.concatenate([check_paths(p).reshape(-1, p.shape[-1]) for p in path_sets])
    if len(pts) > max_points:
        pts = pts[np.random.default_rng(seed).choice(len(pts), max_points, replace=False)]
    med = float(np.median(pdist(pts)))
    return med if med > 0 else 1.0


def increment_products(x: np.ndarray, y: np.ndarray, sigma: float | None) -> np.ndarray:
    """`c[a, b, i, j]`: `<dx_a,i, dy_b,j>` (linear) or the RBF second difference (sigma given).

    RBF: `kappa(u, v) = exp(-|u - v|^2 / (2 sigma^2))`, and
    `c = kappa(x_i+1, y_j+1) - kappa(x_i, y_j+1) - kappa(x_i+1, y_j) + kappa(x_i, y_j)`.
    """
    if sigma is None:
        return np.einsum("aic,bjc->abij", np.diff(x, axis=1), np.diff(y, axis=1))
    sq = (
        (x**2).sum(-1)[:, None, :, None]
        + (y**2).sum(-1)[None, :, None, :]
        - 2.0 * np.einsum("aic,bjc->abij", x, y)
    )
    gram = np.exp(-np.maximum(sq, 0.0) / (2.0 * sigma**2))
    return np.diff(np.diff(gram, axis=2), axis=3)


def solve_goursat(c: np.ndarray, refinement: int = 0, order: int = 2) -> np.ndarray:
    """Solve the Goursat PDE on a grid of increment products `c` (..., n1, n2); return K at (1, 1).

    Dyadic refinement of order r splits every increment into 2^r pieces, each carrying
    `c / 4^r`. Second-order explicit scheme (paper's discretisation, Salvi et al. Eq. 3.6):
    `K[i+1,j+1] = (K[i+1,j] + K[i,j+1]) (1 + c/2 + c^2/12) - K[i,j] (1 - c^2/12)`;
    first-order: `K[i+1,j+1] = K[i+1,j] + K[i,j+1] + K[i,j] (c - 1)`.
    """
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order}")
    if refinement < 0:
        raise ValueError(f"refinement must be >= 0, got {refinement}")
    batch = c.shape[:-2]
    # pairs on the last axis: each anti-diagonal step gathers contiguous rows of pairs
    f = 2**refinement
    c = np.moveaxis(c.reshape(-1, *c.shape[-2:]), 0, -1) / float(f * f)
    n1, n2, p = c.shape[0] * f, c.shape[1] * f, c.shape[2]
    k = np.ones((n1 + 1, n2 + 1, p))
    for diag in range(2, n1 + n2 + 1):
        i = np.arange(max(1, diag - n2), min(n1, diag - 1) + 1)
        j = diag - i
        cij = c[(i - 1) // f, (j - 1) // f]  # refined cell -> its coarse increment
        if order == 2:
            k[i, j] = (k[i, j - 1] + k[i - 1, j]) * (1 + cij / 2 + cij**2 / 12) - k[
                i - 1, j - 1
            ] * (1 - cij**2 / 12)
        else:
            k[i, j] = k[i, j - 1] + k[i - 1, j] + k[i - 1, j - 1] * (cij - 1)
    return k[-1, -1].reshape(batch)


def signature_kernel(
    x: np.ndarray, y: np.ndarray, sigma: float | None = None, refinement: int = 0, order: int = 2
) -> np.ndarray:
    """Batched k(x_a, y_a) for paired batches x, y of shape (batch, length, channels)."""
    x, y = check_paths(x, "x"), check_paths(y, "y")
    if x.shape[0] != y.shape[0] or x.shape[2] != y.shape[2]:
        raise ValueError(f"x and y must pair up in batch and channels, got {x.shape} and {y.shape}")
    out = np.empty(x.shape[0])
    for a in range(0, x.shape[0], _PAIRS_PER_BLOCK):
        xa, ya = x[a : a + _PAIRS_PER_BLOCK], y[a : a + _PAIRS_PER_BLOCK]
        c = np.stack([increment_products(u[None], v[None], sigma)[0, 0] for u, v in zip(xa, ya)])
        out[a : a + len(xa)] = solve_goursat(c, refinement, order)
    return out


def gram(
    x: np.ndarray,
    y: np.ndarray | None = None,
    sigma: float | None = None,
    refinement: int = 0,
    order: int = 2,
) -> np.ndarray:
    """Gram matrix `G[a, b] = k(x_a, y_b)`; with `y=None` the symmetric Gram of x (upper half solved)."""
    x = check_paths(x, "x")
    sym = y is None
    y = x if sym else check_paths(y, "y")
    if x.shape[2] != y.shape[2]:
        raise ValueError(
            f"x and y need the same number of channels, got {x.shape[2]} and {y.shape[2]}"
        )
    n, m = len(x), len(y)
    out = np.empty((n, m))
    rows = max(1, _PAIRS_PER_BLOCK // m)
    for a in range(0, n, rows):
        b0 = a if sym else 0
        c = increment_products(x[a : a + rows], y[b0:], sigma)
        out[a : a + rows, b0:] = solve_goursat(c, refinement, order)
    if sym:
        out = np.triu(out) + np.triu(out, 1).T
    return out


def pysiglib_gram(
    x: np.ndarray, y: np.ndarray | None = None, sigma: float | None = None, refinement: int = 0
) -> np.ndarray:
    """`gram` through pysiglib's C++ solver (same second-order scheme, same refinement).

    RBF static kernel `exp(-|u - v|^2 / (2 sigma^2))` (pysiglib's `RBFKernel(2 sigma^2)`), the
    linear kernel when sigma is None. With `y=None` pysiglib solves the upper half only.
    """
    import pysiglib

    x = np.ascontiguousarray(check_paths(x, "x"))
    y = x if y is None else np.ascontiguousarray(check_paths(y, "y"))
    if x.shape[2] != y.shape[2]:
        raise ValueError(
            f"x and y need the same number of channels, got {x.shape[2]} and {y.shape[2]}"
        )
    if refinement < 0:
        raise ValueError(f"refinement must be >= 0, got {refinement}")
    static = None if sigma is None else pysiglib.RBFKernel(2.0 * sigma**2)
    out = pysiglib.sig_kernel_gram(
        x, y, dyadic_order=refinement, static_kernel=static, max_batch=_PYSIGLIB_MAX_BATCH
    )
    return np.asarray(out, dtype=np.float64)


def normalise(k: np.ndarray, diag_x: np.ndarray, diag_y: np.ndarray) -> np.ndarray:
    """`k(x, y) / sqrt(k(x, x) k(y, y))`: unit-diagonal kernel, tames growth with path variation."""
    return k / np.sqrt(np.outer(diag_x, diag_y))
