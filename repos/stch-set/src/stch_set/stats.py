"""Paired comparisons over the same seeds (same instance, same initial solutions): a Student-t
interval on the per-seed log ratio (the worst case spans orders of magnitude across seeds, so a
ratio is compared on the log scale) and on the raw difference."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

LEVEL = 0.95
"""Two-sided confidence level of every interval."""


def t_interval(diffs: np.ndarray) -> tuple[float, float, float]:
    """(mean, low, high) of a Student-t interval; infinite with a single seed."""
    mean = float(diffs.mean())
    if diffs.size < 2:
        return mean, -math.inf, math.inf
    half = stats.t.ppf(0.5 + LEVEL / 2, diffs.size - 1) * diffs.std(ddof=1) / math.sqrt(diffs.size)
    return mean, mean - float(half), mean + float(half)


def paired(baseline: list[float], ours: list[float]) -> dict:
    """Baseline against ours on the same seeds (lower is better for both).

    ratio = geometric mean of baseline/ours with its interval (None when a value is <= 0),
    diff = mean of baseline - ours with its interval, wins = seeds where ours is strictly lower.
    """
    base, mine = np.asarray(baseline, dtype=float), np.asarray(ours, dtype=float)
    if base.shape != mine.shape or base.size == 0:
        raise ValueError(
            f"paired comparison needs equal seed lists, got {base.size} and {mine.size}"
        )
    diff = t_interval(base - mine)
    out = {
        "n": int(base.size),
        "wins": int((mine < base).sum()),
        "diff": {"mean": diff[0], "low": diff[1], "high": diff[2]},
        "ratio": None,
    }
    if (base > 0).all() and (mine > 0).all():
        mean, low, high = t_interval(np.log(base) - np.log(mine))
        out["ratio"] = {"gm": math.exp(mean), "low": math.exp(low), "high": math.exp(high)}
    return out


def lower_with_confidence(cmp: dict, factor: float = 1.0) -> bool:
    """True when ours is lower by at least `factor` with confidence: the ratio interval lies
    above `factor`. For objectives that can be <= 0 (user problems) only factor 1 is defined,
    read off the difference's interval."""
    if cmp["ratio"] is not None:
        return cmp["ratio"]["low"] > factor
    return factor == 1.0 and cmp["diff"]["low"] > 0


def describe(label: str, cmp: dict) -> str:
    """'TCH-Set 1.07x [0.91, 1.26], diff +0.044 [-0.02, 0.11], wins 2/3'."""
    diff = cmp["diff"]
    text = f"{label} "
    if cmp["ratio"] is not None:
        r = cmp["ratio"]
        text += f"{r['gm']:.3g}x [{r['low']:.3g}, {r['high']:.3g}], "
    text += f"diff {diff['mean']:+.3g} [{diff['low']:.3g}, {diff['high']:.3g}]"
    return text + f", STCH-Set lower on {cmp['wins']}/{cmp['n']} seeds"
