"""The claims' statistics: paired per-item differences with a bootstrap interval that resamples
items within each seed (the generated results.paired_interval is a t interval over seeds)."""

from __future__ import annotations

import numpy as np


def paired_bootstrap(
    a: list[np.ndarray], b: list[np.ndarray], n_boot: int, level: float = 0.95, seed: int = 0
) -> dict[str, float]:
    """Mean of the paired differences a - b over every item of every seed (a[s], b[s]: per-item
    values of two methods on the same items of seed s; NaN items dropped) and a percentile
    bootstrap interval that resamples items within each seed."""
    diffs = []
    for x, y in zip(a, b, strict=True):
        d = np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
        diffs.append(d[np.isfinite(d)])
    total = sum(d.size for d in diffs)
    if total == 0:
        raise ValueError("paired_bootstrap needs at least one item with both values finite")
    rng = np.random.default_rng(seed)
    boot = np.zeros(n_boot)
    for d in diffs:
        if d.size:
            boot += d[rng.integers(0, d.size, size=(n_boot, d.size))].sum(1)
    boot /= total
    alpha = (1.0 - level) / 2
    return {
        "diff": float(np.concatenate(diffs).mean()),
        "lo": float(np.quantile(boot, alpha)),
        "hi": float(np.quantile(boot, 1 - alpha)),
        "n": int(total),
        "level": level,
    }
