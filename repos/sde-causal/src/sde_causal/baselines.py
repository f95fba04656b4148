"""Comparison methods, each an edge test `(i, j, S) -> p` over the same PathData, plus the two
whole-graph baselines (linear Granger, tigramite PCMCI) run natively.

- KCI on flattened paths: causal-learn's KCI with Gaussian kernels on the same three segments
  as SigKer-CI, each segment a plain vector.
- Partial correlation on increments: Fisher-z between i's last-window increment and j's future
  increment, given j's last-window increment and level and the increments of S.
Every hyperparameter (KCI's ridge, the increment window, Granger's lags, PCMCI's tau_max) is a
constructor argument, tuned like SigKer-CI's ridge on validation null data (`tuning.py`).
- Linear Granger: pooled OLS of j's increments on lags of j, S and i; F-test of i's lags.
- PCMCI (tigramite, ParCorr): links i(t - tau) -> j(t), tau = 1..tau_max, Bonferroni over lags.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from causallearn.utils.KCI.KCI import KCI_CInd
from scipy import stats
from tigramite import data_processing as pp
from tigramite.independence_tests.parcorr import ParCorr
from tigramite.pcmci import PCMCI

from .discovery import PathData, bh_prune


def _flat(data: PathData, k: int, lo: float, hi: float) -> np.ndarray:
    return data.window(k, lo, hi)[..., 0]


def _standardise(x: np.ndarray) -> np.ndarray:
    sd = x.std(0)
    return (x - x.mean(0)) / np.where(sd > 0, sd, 1.0)


class KCIFlatTest:
    """KCI (Zhang et al. 2011, causal-learn) with the path segments flattened to vectors.

    `eps` is KCI's ridge (causal-learn's epsilon_x = epsilon_y) as a multiple of n, the same
    parametrisation as SigKer-CI's ridge; causal-learn's fixed 1e-3 is eps = 1e-5 at n = 100.
    """

    def __init__(self, data: PathData, eps: float = 1e-5):
        self.data, self.eps = data, eps

    def __call__(self, i: int, j: int, cond: Sequence[int] = ()) -> float:
        s, h = self.data.s, self.data.h
        x = _flat(self.data, i, 0.0, s)
        y = _flat(self.data, j, s, s + h)
        z = np.hstack(
            [_flat(self.data, j, 0.0, s), *(_flat(self.data, k, 0.0, s + h) for k in cond)]
        )
        kci = KCI_CInd()
        kci.epsilon_x = kci.epsilon_y = self.eps * len(x)
        p, _ = kci.compute_pvalue(_standardise(x), _standardise(y), _standardise(z))
        return float(p)


def _value_at(data: PathData, k: int, t: float) -> np.ndarray:
    """Value of variable k at the last observation time <= t, per path."""
    idx = (data.times <= t + 1e-12).sum(1) - 1
    return data.paths[np.arange(len(idx)), idx, k]


def _increment(data: PathData, k: int, lo: float, hi: float) -> np.ndarray:
    return _value_at(data, k, hi) - _value_at(data, k, lo)


def partial_corr_pvalue(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> float:
    """Fisher-z test of the partial correlation of scalars x and y given the columns of z."""
    design = np.column_stack([np.ones(len(x)), z])
    rx = x - design @ np.linalg.lstsq(design, x, rcond=None)[0]
    ry = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    r = np.clip(np.corrcoef(rx, ry)[0, 1], -0.999999, 0.999999)
    dof = len(x) - z.shape[1] - 3
    return float(2 * stats.norm.sf(abs(np.arctanh(r)) * np.sqrt(max(dof, 1))))


class PartialCorrIncrementTest:
    """Partial correlation on increments over [s - window, s] (past) and [s, s + h] (future)."""

    def __init__(self, data: PathData, window: float = 0.5):
        self.data, self.window = data, window

    def __call__(self, i: int, j: int, cond: Sequence[int] = ()) -> float:
        s, h = self.data.s, self.data.h
        lo = max(0.0, s - self.window)
        z = [_increment(self.data, j, lo, s), _value_at(self.data, j, s)]
        for k in cond:
            z += [_increment(self.data, k, lo, s), _increment(self.data, k, s, s + h)]
        return partial_corr_pvalue(
            _increment(self.data, i, lo, s), _increment(self.data, j, s, s + h), np.column_stack(z)
        )


def granger_pvalue(paths: np.ndarray, i: int, j: int, cond: Sequence[int], lags: int) -> float:
    """F-test that lags of i improve the pooled OLS of j's increments on lags of j and cond."""
    length = paths.shape[1]
    target = (paths[:, lags:, j] - paths[:, lags - 1 : -1, j]).reshape(-1)

    def lagged(k: int) -> list[np.ndarray]:
        return [paths[:, lags - q : length - q, k].reshape(-1) for q in range(1, lags + 1)]

    base = [np.ones_like(target), *lagged(j), *(c for k in cond for c in lagged(k))]
    small, full = np.column_stack(base), np.column_stack(base + lagged(i))
    rss = [
        ((target - m @ np.linalg.lstsq(m, target, rcond=None)[0]) ** 2).sum() for m in (small, full)
    ]
    dof = len(target) - full.shape[1]
    f = ((rss[0] - rss[1]) / lags) / (rss[1] / dof)
    return float(stats.f.sf(f, lags, dof))


class GrangerTest:
    """Linear Granger causality on the observation grid, pooled over paths."""

    def __init__(self, data: PathData, lags: int):
        self.data, self.lags = data, lags

    def __call__(self, i: int, j: int, cond: Sequence[int] = ()) -> float:
        return granger_pvalue(self.data.paths, i, j, cond, self.lags)


def granger_graph(data: PathData, alpha: float, lags: int) -> np.ndarray:
    """Full-conditioning Granger graph: i -> j given all other variables, then BH."""
    d = data.d
    return bh_prune(~np.eye(d, dtype=bool), granger_pvalues(data, lags), alpha)


def granger_pvalues(data: PathData, lags: int) -> np.ndarray:
    """(d, d) p-values of i -> j given all other variables (1 on the diagonal)."""
    d = data.d
    p = np.ones((d, d))
    for i in range(d):
        for j in range(d):
            if i != j:
                p[i, j] = granger_pvalue(
                    data.paths, i, j, [k for k in range(d) if k not in (i, j)], lags
                )
    return p


def pcmci_pvalues(paths: np.ndarray, tau_max: int) -> np.ndarray:
    """tigramite PCMCI (ParCorr) over all paths as multiple datasets; (d, d) lag-Bonferroni p."""
    frame = pp.DataFrame({m: paths[m] for m in range(len(paths))}, analysis_mode="multiple")
    res = PCMCI(frame, cond_ind_test=ParCorr(), verbosity=0).run_pcmci(tau_min=1, tau_max=tau_max)
    p = np.minimum(1.0, res["p_matrix"][:, :, 1:].min(axis=2) * tau_max)
    np.fill_diagonal(p, 1.0)
    return p


class PCMCITest:
    """PCMCI restricted to the variables {i, j} and S; the p-value of the link i -> j."""

    def __init__(self, data: PathData, tau_max: int):
        self.data, self.tau_max = data, tau_max

    def __call__(self, i: int, j: int, cond: Sequence[int] = ()) -> float:
        keep = [i, j, *cond]
        return float(pcmci_pvalues(self.data.paths[..., keep], self.tau_max)[0, 1])


def pcmci_graph(data: PathData, alpha: float, tau_max: int) -> np.ndarray:
    """PCMCI on all variables, lag-Bonferroni link p-values, then BH."""
    d = data.d
    return bh_prune(~np.eye(d, dtype=bool), pcmci_pvalues(data.paths, tau_max), alpha)
