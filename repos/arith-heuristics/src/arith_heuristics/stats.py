"""The claims' paired intervals: a percentile bootstrap over (operator, seed) units."""

from __future__ import annotations

import numpy as np


def bootstrap_interval(diff, n_boot: int, seed: int = 0) -> dict[str, float]:
    """Mean of paired differences (NaN units dropped) and its 95% percentile-bootstrap
    interval; NaNs when no unit is left."""
    d = np.asarray(diff, dtype=float)
    d = d[np.isfinite(d)]
    if len(d) == 0:
        return {"mean": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": 0}
    boot = np.random.default_rng(seed).choice(d, (n_boot, len(d)), replace=True).mean(1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {"mean": float(d.mean()), "lo": float(lo), "hi": float(hi), "n": len(d)}
