"""The signature-kernel CI test on path segments (paper Sec. 3.2).

The hypothesis for a candidate edge i -> j at cut time s with horizon h is
`X^i_[0,s]  _||_  X^j_[s,s+h]  |  X^j_[0,s], X^S_[0,s+h]` (paper Prop. 3.1 / Alg. 1): the past of i
against the future of j, given the past of j and the conditioning set's paths up to s+h.
Each segment gets a time-augmented signature kernel (RBF static kernel, median bandwidth), the
conditioning kernel is the product of its parts, the statistic is a kernel-ridge residualised
HSIC (as in KCI), and the null is a conditional permutation: X is swapped within pairs of
samples that are nearest neighbours in the conditioning kernel's metric (SDCIT/KCIPT-style).
The paper uses KCIPT/SDCIT themselves (per secondary sources); README Deviations has the match.
"""

from __future__ import annotations

import numpy as np

from . import sigkernel


def segment(paths: np.ndarray, times: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Time-augmented piece of every path on [lo, hi], padded by repeating its last point.

    Each path keeps its own observation times (irregular sampling enters through the time
    channel). Where a path has no observation exactly at lo or hi, its last value seen so far
    is carried forward to that time (the observed path is held constant between observations):
    a value at lo is never interpolated from a later observation, which would leak the future
    into a "past" segment. Padding repeats value and time, so the signature (hence the kernel)
    is unchanged, and all segments share one array shape.
    """
    paths = sigkernel.check_paths(paths)
    times = np.broadcast_to(np.asarray(times, dtype=np.float64), paths.shape[:2])
    if not lo < hi:
        raise ValueError(f"window needs lo < hi, got [{lo}, {hi}]")
    tol = 1e-12
    aug = np.concatenate([paths, times[..., None]], axis=-1)
    pieces = []
    for a in range(len(paths)):
        inside = np.flatnonzero((times[a] >= lo - tol) & (times[a] <= hi + tol))
        if len(inside) == 0:
            raise ValueError(f"window [{lo}, {hi}] holds no observation on path {a}")
        pts = aug[a, inside]
        if inside[0] > 0 and times[a, inside[0]] > lo + tol:
            held = aug[a, inside[0] - 1].copy()  # last value before lo, carried forward to lo
            held[-1] = lo
            pts = np.concatenate([held[None], pts])
        if pts[-1, -1] < hi - tol:
            pts = np.concatenate([pts, pts[-1:]])
            pts[-1, -1] = hi
        pieces.append(pts)
    out = np.empty((len(paths), max(len(p) for p in pieces), aug.shape[-1]))
    for a, pts in enumerate(pieces):
        out[a, : len(pts)] = pts
        out[a, len(pts) :] = pts[-1]
    return out


def normalised_gram(seg: np.ndarray, refinement: int) -> np.ndarray:
    """Unit-diagonal signature Gram with an RBF static kernel at the median-heuristic bandwidth.

    Solved by pysiglib (`sigkernel.pysiglib_gram`); the numpy solver is the tested reference.
    """
    k = sigkernel.pysiglib_gram(seg, sigma=sigkernel.median_bandwidth(seg), refinement=refinement)
    diag = np.diag(k).copy()
    return sigkernel.normalise(k, diag, diag)


def _centre(k: np.ndarray) -> np.ndarray:
    return k - k.mean(0) - k.mean(1)[:, None] + k.mean()


def residual_operator(kz: np.ndarray, ridge: float) -> np.ndarray:
    """`R = eps (H K_z H + eps I)^-1 H`: centred kernel ridge residuals on Z, `eps = ridge * n`."""
    n = len(kz)
    eps = ridge * n
    h = np.eye(n) - 1.0 / n
    return eps * np.linalg.inv(_centre(kz) + eps * np.eye(n)) @ h


def nearest_pairs(kz: np.ndarray) -> np.ndarray:
    """Greedy matching of samples by the kernel distance `d^2 = k_aa + k_bb - 2 k_ab`; (pairs, 2)."""
    d2 = np.diag(kz)[:, None] + np.diag(kz)[None, :] - 2 * kz
    a, b = np.triu_indices(len(kz), 1)
    order = np.argsort(d2[a, b], kind="stable")
    free = np.ones(len(kz), dtype=bool)
    pairs = []
    for u, v in zip(a[order], b[order]):
        if free[u] and free[v]:
            free[u] = free[v] = False
            pairs.append((u, v))
    return np.array(pairs, dtype=int).reshape(-1, 2)


def kernel_ci_test(
    kx: np.ndarray,
    ky: np.ndarray,
    kz: np.ndarray | None,
    n_perm: int,
    rng: np.random.Generator,
    ridge: float = 1e-2,
) -> tuple[float, float]:
    """Test X _||_ Y | Z from Gram matrices; returns (statistic, permutation p-value).

    Statistic `T = tr(R Kx R' . R Ky R') / n` with R the residual operator of Z (identity-centring
    when Z is absent). Null: swap X inside nearest-neighbour pairs of Z, each with probability 1/2
    (uniform permutations when Z is absent). p = (1 + #{T_perm >= T}) / (1 + n_perm).
    """
    n = len(kx)
    if ky.shape != (n, n) or (kz is not None and kz.shape != (n, n)):
        raise ValueError("kx, ky and kz must be square Gram matrices over the same samples")
    if n_perm < 1:
        raise ValueError(f"n_perm must be >= 1, got {n_perm}")
    if kz is None:
        r = np.eye(n) - 1.0 / n
        pairs = None
    else:
        r = residual_operator(kz, ridge)
        pairs = nearest_pairs(kz)
    # tr(R Kx_pi R' R Ky R') = sum(Kx_pi * M) with M = R'R Ky R'R: each permutation is O(n^2).
    m = r.T @ r @ ky @ r.T @ r
    stat = float((kx * m).sum() / n)
    null = np.empty(n_perm)
    for b in range(n_perm):
        if pairs is None:
            perm = rng.permutation(n)
        else:
            perm = np.arange(n)
            swap = pairs[rng.random(len(pairs)) < 0.5]
            perm[swap[:, 0]], perm[swap[:, 1]] = swap[:, 1], swap[:, 0]
        null[b] = (kx[np.ix_(perm, perm)] * m).sum() / n
    return stat, float((1 + (null >= stat).sum()) / (1 + n_perm))


STATISTICS = ("hsic", "sdcit")


def pairing_permutation(pairs: np.ndarray, n: int) -> np.ndarray:
    """The involution that swaps the two members of every pair (unpaired samples stay)."""
    pi = np.arange(n)
    pi[pairs[:, 0]], pi[pairs[:, 1]] = pairs[:, 1], pairs[:, 0]
    return pi


def mmsd_weights(kxz: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """V with `MMSD(Ky) = sum(V * Ky)`: SDCIT's maximum mean self-discrepancy (Lee and Honavar,
    UAI 2017) between the sample (x, y, z) and its copy (x, y_pi, z), kernel Kxz * Ky, as the mean
    of `Kxz[i,k] (Ky[i,k] + Ky[pi i, pi k] - Ky[i, pi k] - Ky[pi i, k])` over the pairs (i, k)
    with i != k, k != pi(i), i != pi(k) (those terms share a sample with their permuted copy)."""
    n = len(kxz)
    idx = np.arange(n)
    keep = np.ones((n, n), dtype=bool)
    keep[idx, idx] = keep[idx, pi] = keep[pi, idx] = False
    w = np.where(keep, kxz, 0.0) / keep.sum()
    return w + w[np.ix_(pi, pi)] - w[:, pi] - w[pi, :]


def sdcit_test(
    kx: np.ndarray,
    ky: np.ndarray,
    kz: np.ndarray | None,
    n_perm: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """SDCIT-style test of X _||_ Y | Z from Gram matrices; returns (MMSD, p-value).

    Statistic: SDCIT's MMSD with Y permuted by the nearest-neighbour pairing of Z (`mmsd_weights`;
    without Z a random pairing, an unconditional test). Null (our reconstruction, KCIPT-style):
    inside every pair the original and the swapped versions are exchangeable under H0, so Y is
    swapped inside each pair with probability 1/2 and the MMSD recomputed; SDCIT's own null
    (half-sample MMSDs with fresh matchings, rescaled) is not used. p = (1 + #{T_b >= T}) / (1 + B).
    """
    n = len(kx)
    if ky.shape != (n, n) or (kz is not None and kz.shape != (n, n)):
        raise ValueError("kx, ky and kz must be square Gram matrices over the same samples")
    if n_perm < 1:
        raise ValueError(f"n_perm must be >= 1, got {n_perm}")
    if kz is None:
        pairs, kxz = rng.permutation(n)[: n - n % 2].reshape(-1, 2), kx
    else:
        pairs, kxz = nearest_pairs(kz), kx * kz
    v = mmsd_weights(kxz, pairing_permutation(pairs, n))
    stat = float((v * ky).sum())
    null = np.empty(n_perm)
    for b in range(n_perm):
        perm = pairing_permutation(pairs[rng.random(len(pairs)) < 0.5], n)
        null[b] = (ky[np.ix_(perm, perm)] * v).sum()
    return stat, float((1 + (null >= stat).sum()) / (1 + n_perm))
