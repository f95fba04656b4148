"""The claims' statistics: paired differences with a block bootstrap interval (the generated
results.paired_interval is a t interval over seeds; the claims here pair single episodes that
share a trained model and a task, so whole blocks of them are resampled)."""

from __future__ import annotations

import numpy as np


def paired_bootstrap(
    diff: np.ndarray, cluster: int = 1, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> dict[str, float]:
    """Mean of paired differences with a percentile bootstrap interval. With cluster > 1 the
    pairs come in consecutive blocks of that size (the episodes of one seed's task, which share
    a trained model and a task) and whole blocks are resampled, not single episodes."""
    diff = np.asarray(diff, dtype=float)
    if len(diff) % cluster:
        raise ValueError(f"{len(diff)} pairs do not split into blocks of {cluster}")
    blocks = diff.reshape(-1, cluster).mean(axis=1)
    rng = np.random.default_rng(seed)
    means = blocks[rng.integers(len(blocks), size=(n_boot, len(blocks)))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return {
        "mean": float(diff.mean()),
        "lo": float(lo),
        "hi": float(hi),
        "n": len(diff),
        "blocks": len(blocks),
    }


def fmt_iv(iv: dict) -> str:
    """'+0.123 [+0.045, +0.201]': a paired mean and its interval."""
    return f"{iv['mean']:+.3f} [{iv['lo']:+.3f}, {iv['hi']:+.3f}]"
