"""Rates at a calibrated level and intervals for the claims (CONVENTIONS.md section 8).

- Size-adjusted power: each test rejects at its own critical value, the p-value cut that
  rejects exactly alpha of that test's null data sets of the same n (randomised at the cut when
  p-values tie there, as permutation p-values do at their floor 1 / (n_perm + 1)); an
  anti-conservative test cannot buy power with excess type-I error, a conservative one is not
  penalised for it.
- Paired bootstrap: methods are compared on the same data sets; data sets (and the null data
  sets that set the critical values) are resampled jointly for every method.
- Wilson interval for a single rate.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

N_BOOT = 2000


def critical_value(null_p: np.ndarray, alpha: float) -> tuple[float, float]:
    """(c, gamma) of the randomised size-alpha test on these null p-values.

    Reject when p < c, and with probability gamma when p == c, so that exactly alpha of the
    null data sets are rejected: c is the (floor(alpha m) + 1)-th smallest null p-value and
    gamma = (alpha m - #{p < c}) / #{p == c}. c = inf (reject everything) when alpha m >= m.
    """
    p = np.sort(np.asarray(null_p, dtype=float))
    m = len(p)
    k = int(np.floor(alpha * m + 1e-9))
    if k >= m:
        return float("inf"), 0.0
    c = float(p[k])
    below, ties = int((p < c).sum()), int((p == c).sum())
    return c, float(min(1.0, max(0.0, (alpha * m - below) / ties)))


def size_adjusted_power(null_p: np.ndarray, alt_p: np.ndarray, alpha: float) -> float:
    """Expected rejection rate on alternatives of the randomised size-alpha test of null_p."""
    c, gamma = critical_value(null_p, alpha)
    alt = np.asarray(alt_p, dtype=float)
    return float((alt < c).mean() + gamma * (alt == c).mean())


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial rate."""
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    centre = (p + z**2 / (2 * trials)) / (1 + z**2 / trials)
    half = z * np.sqrt(p * (1 - p) / trials + z**2 / (4 * trials**2)) / (1 + z**2 / trials)
    return (float(max(0.0, centre - half)), float(min(1.0, centre + half)))


def bootstrap_interval(
    statistic: Callable[[np.ndarray, np.ndarray], float],
    n_null: int,
    n_alt: int,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of statistic(null_idx, alt_idx) over joint resamples of both sets."""
    rng = np.random.default_rng(seed)
    vals = [
        statistic(rng.integers(0, n_null, n_null), rng.integers(0, n_alt, n_alt))
        for _ in range(N_BOOT)
    ]
    lo, hi = np.quantile(vals, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi))


def paired_power_difference(
    null_a: np.ndarray,
    alt_a: np.ndarray,
    null_b: np.ndarray,
    alt_b: np.ndarray,
    alpha: float,
    seed: int = 0,
) -> dict[str, float]:
    """Size-adjusted power of a minus b on the same data sets, with a joint-bootstrap interval."""

    def diff(ni: np.ndarray, ai: np.ndarray) -> float:
        return size_adjusted_power(null_a[ni], alt_a[ai], alpha) - size_adjusted_power(
            null_b[ni], alt_b[ai], alpha
        )

    everything = np.arange(len(null_a)), np.arange(len(alt_a))
    lo, hi = bootstrap_interval(diff, len(null_a), len(alt_a), seed)
    return {"diff": diff(*everything), "lo": lo, "hi": hi}


def paired_mean_difference(a: np.ndarray, b: np.ndarray, seed: int = 0) -> dict[str, float]:
    """Mean of a - b over paired instances with a bootstrap percentile interval."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    lo, hi = bootstrap_interval(lambda _, ai: float(d[ai].mean()), 1, len(d), seed)
    return {"diff": float(d.mean()), "lo": lo, "hi": hi}
