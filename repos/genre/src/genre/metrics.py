"""Recourse metrics of the paper: L1 cost, gold / soft / classifier validity, LOF inlier rate,
the combined Score = validity + LOF - cost / d, and paired bootstrap intervals; beside LOF, a
kNN-distance plausibility that does not saturate (issue 73, point 3)."""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import LocalOutlierFactor, NearestNeighbors


def l1_cost(x: np.ndarray, x_cf: np.ndarray) -> np.ndarray:
    """||x - x_cf||_1 per row, on min-max-scaled features."""
    return np.abs(np.asarray(x) - np.asarray(x_cf)).sum(1)


def fit_lof(x_gold_pos: np.ndarray) -> LocalOutlierFactor:
    """LOF(n_neighbors=5, novelty=True) on the gold-positive points, as in the paper."""
    return LocalOutlierFactor(n_neighbors=5, novelty=True).fit(x_gold_pos)


def lof_inliers(lof: LocalOutlierFactor, x_cf: np.ndarray) -> np.ndarray:
    """1.0 for each recourse LOF calls an inlier (predict == +1), else 0.0."""
    return (lof.predict(np.asarray(x_cf)) == 1).astype(float)


def lof_inlier_rate(lof: LocalOutlierFactor, x_cf: np.ndarray) -> float:
    """Fraction of recourses LOF calls inliers."""
    return float(lof_inliers(lof, x_cf).mean())


class KnnPlausibility:
    """How deep in the positive data a point lies, against real positives held out from it.

    d_k(x) is the distance from x to its k-th nearest neighbour among `held_out` (gold
    positives of the test split). `reference` (gold positives of the training split, none of
    them in `held_out`) gives the data's own d_k, out of sample as a recourse's is. A point's
    plausibility is the share of reference points with d_k at least its own: a real positive
    scores 0.5 on average by construction, a point in a denser region more (up to 1), a point
    off the data less (0 beyond every reference point). Unlike LOF's inlier rate it does not
    saturate at 1 for everything inside the data's support."""

    def __init__(self, held_out: np.ndarray, reference: np.ndarray, k: int = 5):
        if len(held_out) == 0 or len(reference) == 0:
            raise ValueError("kNN plausibility needs held-out and reference positives")
        self.nn = NearestNeighbors(n_neighbors=min(k, len(held_out))).fit(held_out)
        self.reference = np.sort(self.distance(reference))

    def distance(self, x: np.ndarray) -> np.ndarray:
        """d_k: distance to the k-th nearest held-out positive."""
        return self.nn.kneighbors(np.asarray(x))[0][:, -1]

    def __call__(self, x_cf: np.ndarray) -> np.ndarray:
        beyond = np.searchsorted(self.reference, self.distance(x_cf), side="left")
        return 1.0 - beyond / len(self.reference)


def violations(
    x: np.ndarray, x_cf: np.ndarray, immutable: np.ndarray, categorical: np.ndarray
) -> np.ndarray:
    """1.0 for each recourse that changes an immutable feature or leaves a binary categorical
    outside {0, 1}."""
    x, x_cf = np.asarray(x), np.asarray(x_cf)
    moved = (x[:, immutable] != x_cf[:, immutable]).any(1)
    cats = x_cf[:, categorical]
    fractional = ((cats != 0) & (cats != 1)).any(1)
    return (moved | fractional).astype(float)


def constraint_violation_rate(x, x_cf, immutable, categorical) -> float:
    return float(violations(x, x_cf, immutable, categorical).mean())


def combined_score(valid: np.ndarray, lof: np.ndarray, cost: np.ndarray, d: int) -> np.ndarray:
    """The paper's Score per recourse: validity + LOF inlier - cost / d (higher is better)."""
    return np.asarray(valid) + np.asarray(lof) - np.asarray(cost) / d


def per_instance(
    x: np.ndarray,
    x_cf: np.ndarray,
    p_gold: np.ndarray,
    p_h: np.ndarray,
    lofs: dict,
    immutable: np.ndarray,
    categorical: np.ndarray,
    knn: KnnPlausibility | None = None,
) -> dict[str, np.ndarray]:
    """Every per-recourse quantity; `lofs` maps a name ("lof", "lof_train_fit") to a fitted
    LOF. "score" uses the first LOF of `lofs` (the protocol's main fit set); `knn` adds
    "knn_plausibility" (reported and claimed beside LOF, not part of the Score)."""
    out = {
        "cost": l1_cost(x, x_cf),
        "gold_validity": (p_gold > 0.5).astype(float),
        "soft_validity": np.asarray(p_gold, dtype=float),
        "ann_validity": (p_h > 0.5).astype(float),
        "constraint_violations": violations(x, x_cf, immutable, categorical),
    }
    for name, lof in lofs.items():
        out[name] = lof_inliers(lof, x_cf)
    if knn is not None:
        out["knn_plausibility"] = knn(x_cf)
    main = next(iter(lofs))
    out["score"] = combined_score(out["gold_validity"], out[main], out["cost"], x.shape[1])
    return out


def paired_interval(
    diffs: list[np.ndarray], n_boot: int, seed: int = 0, level: float = 0.95
) -> dict[str, float]:
    """Mean over seeds of the per-seed mean paired difference, and a bootstrap interval that
    resamples the negatives within each seed (the same negatives for both methods)."""
    rng = np.random.default_rng(seed)
    point = float(np.mean([d.mean() for d in diffs]))
    boot = np.zeros(n_boot)
    for d in diffs:
        boot += d[rng.integers(0, len(d), (n_boot, len(d)))].mean(1)
    boot /= len(diffs)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return {"mean": point, "lo": float(lo), "hi": float(hi)}
