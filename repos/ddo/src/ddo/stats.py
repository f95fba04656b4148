"""Intervals over seeds as the claims use them: mean and 95% t interval ("low"/"high" keys, as in
the results files), the one-sided checks on them, and their text form."""

from __future__ import annotations

import math

import numpy as np

from .results import t_quantile


def t_interval(values: list[float]) -> dict[str, float]:
    """Mean and 95% t interval over seeds (a paired difference when `values` are differences).

    One value gives no interval (low = high = None), so no claim can rest on a single seed.
    """
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if arr.size < 2:
        return {"mean": mean, "low": None, "high": None, "n": int(arr.size)}
    half = t_quantile(arr.size - 1) * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": int(arr.size)}


def below(iv: dict[str, float], threshold: float) -> bool:
    """The whole interval lies below `threshold` (False without an interval)."""
    return iv["high"] is not None and iv["high"] < threshold


def above(iv: dict[str, float], threshold: float) -> bool:
    """The whole interval lies above `threshold` (False without an interval)."""
    return iv["low"] is not None and iv["low"] > threshold


def fmt_interval(iv: dict[str, float], digits: int = 3) -> str:
    if iv["low"] is None:
        return f"{iv['mean']:.{digits}f} [no interval: one seed]"
    return f"{iv['mean']:.{digits}f} [{iv['low']:.{digits}f}, {iv['high']:.{digits}f}]"
