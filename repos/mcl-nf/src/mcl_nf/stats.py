"""Paired comparisons over seeds: the mean difference and its exact two-sided t interval."""

from __future__ import annotations

from typing import Any

import numpy as np


def paired_interval(a: list[float], b: list[float], level: float = 0.95) -> dict[str, Any]:
    """Mean of the paired differences a - b and its two-sided t interval (lo = hi = mean for one
    pair, where no interval exists)."""
    from scipy import stats

    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    mean, n = float(diff.mean()), len(diff)
    half = 0.0
    if n > 1:
        half = float(stats.t.ppf(0.5 + level / 2, n - 1) * diff.std(ddof=1) / np.sqrt(n))
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n, "diffs": diff.tolist()}
