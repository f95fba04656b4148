"""Recourse metrics of the paper: L1 cost, gold / soft / classifier validity, LOF inlier rate."""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import LocalOutlierFactor


def l1_cost(x: np.ndarray, x_cf: np.ndarray) -> np.ndarray:
    """||x - x_cf||_1 per row, on min-max-scaled features."""
    return np.abs(np.asarray(x) - np.asarray(x_cf)).sum(1)


def fit_lof(x_gold_pos: np.ndarray) -> LocalOutlierFactor:
    """LOF(n_neighbors=5, novelty=True) on the gold-positive points, as in the paper."""
    return LocalOutlierFactor(n_neighbors=5, novelty=True).fit(x_gold_pos)


def lof_inlier_rate(lof: LocalOutlierFactor, x_cf: np.ndarray) -> float:
    """Fraction of recourses LOF calls inliers (predict == +1)."""
    return float((lof.predict(np.asarray(x_cf)) == 1).mean())


def constraint_violation_rate(
    x: np.ndarray, x_cf: np.ndarray, immutable: np.ndarray, categorical: np.ndarray
) -> float:
    """Fraction of recourses that change an immutable feature or leave a binary categorical
    outside {0, 1}."""
    x, x_cf = np.asarray(x), np.asarray(x_cf)
    moved = (x[:, immutable] != x_cf[:, immutable]).any(1)
    cats = x_cf[:, categorical]
    fractional = ((cats != 0) & (cats != 1)).any(1)
    return float((moved | fractional).mean())


def summarize_recourse(
    x: np.ndarray,
    x_cf: np.ndarray,
    p_gold: np.ndarray,
    p_h: np.ndarray,
    lof,
    seconds: float,
    immutable: np.ndarray,
    categorical: np.ndarray,
) -> dict[str, float]:
    return {
        "cost": float(l1_cost(x, x_cf).mean()),
        "gold_validity": float((p_gold > 0.5).mean()),
        "soft_validity": float(p_gold.mean()),
        "ann_validity": float((p_h > 0.5).mean()),
        "lof": lof_inlier_rate(lof, x_cf),
        "constraint_violations": constraint_violation_rate(x, x_cf, immutable, categorical),
        "seconds_per_recourse": seconds / len(x),
    }
