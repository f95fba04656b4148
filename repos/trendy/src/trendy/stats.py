"""Paired intervals over seeds and test instances (the evidence standard's bootstrap).

Every claim compares methods on the same seeds and the same test instances (trajectories, or
values of A in a bifurcation sweep). Instances that share a seed share a data set and a trained
model, so they are not independent: `hierarchical_bootstrap` resamples seeds first, then
instances within each drawn seed, and recomputes the statistic on the paired arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Statistic = Callable[..., float]


def hierarchical_bootstrap(
    stat: Statistic,
    groups: Sequence[Sequence[np.ndarray]],
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, float]:
    """Point value and percentile interval of `stat(*arrays)`.

    `groups[g]` holds, for seed g, one array per argument of `stat`, all of the same length
    (paired instances). Each replicate draws len(groups) seeds with replacement and, within each
    drawn seed, its instances with replacement; the arrays are concatenated across seeds.
    """
    if not groups or any(len(g) == 0 for g in groups):
        raise ValueError("hierarchical_bootstrap needs at least one seed with paired arrays")
    n_args = len(groups[0])
    point = stat(*(np.concatenate([np.asarray(g[i]) for g in groups]) for i in range(n_args)))
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    for r in range(n_boot):
        picked = rng.integers(0, len(groups), len(groups))
        parts: list[list[np.ndarray]] = [[] for _ in range(n_args)]
        for g in picked:
            arrays = [np.asarray(a) for a in groups[g]]
            idx = rng.integers(0, len(arrays[0]), len(arrays[0]))
            for i, a in enumerate(arrays):
                parts[i].append(a[idx])
        reps[r] = stat(*(np.concatenate(p) for p in parts))
    alpha = (1.0 - level) / 2.0
    low, high = np.nanquantile(reps, [alpha, 1.0 - alpha])
    return {"value": float(point), "low": float(low), "high": float(high), "level": level}


def ratio_of_means(num: np.ndarray, den: np.ndarray) -> float:
    """mean(num) / mean(den): e.g. SINDyCP's error over TRENDy's on the same instances."""
    return float(np.mean(num) / max(float(np.mean(den)), 1e-300))


def mean_difference(a: np.ndarray, b: np.ndarray) -> float:
    """mean(a - b) over paired instances."""
    return float(np.mean(np.asarray(a) - np.asarray(b)))


def log_ratio_change(num_hi, den_hi, num_lo, den_lo) -> float:
    """log(ratio at high noise) - log(ratio at no noise), ratios of means: > 0 when the first
    method degrades with noise faster than the second."""
    return float(np.log(ratio_of_means(num_hi, den_hi)) - np.log(ratio_of_means(num_lo, den_lo)))


def fmt(ci: dict[str, float], digits: int = 3) -> str:
    """'0.123 [0.100, 0.150]' for a bootstrap result."""
    return f"{ci['value']:.{digits}g} [{ci['low']:.{digits}g}, {ci['high']:.{digits}g}]"
