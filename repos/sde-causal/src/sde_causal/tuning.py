"""Equal, null-only tuning of every method's hyperparameter (issue #32).

Each method has one hyperparameter with a grid of the same size (config `*_grid`). Every grid
value is run on the same validation null data: every null triple in every SDE family at
n = `n_paths`, `tune_reps` rounds, seeds disjoint from the benchmark's. The choice sees only
these null p-values, never alternative (power) data:
  among the grid values whose validation type-I error is at most TYPE1_MAX, take the one whose
  null p-values are closest to uniform (smallest Kolmogorov-Smirnov distance); if no value
  qualifies, take the one with the lowest type-I error.
A conservative test (null p-values piled up near 1) is far from uniform, so the rule moves a
regulariser towards the least conservative calibrated value without looking at power.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from functools import partial

import numpy as np
from scipy import stats

from . import baselines, discovery, sde
from .config import Config
from .data import NULL_TRIPLES, make_data

TYPE1_MAX = 0.10  # the calibration bar of the type-I claim, used here on validation data only
VALIDATION_SEED = 10**9  # validation data sets: seeds VALIDATION_SEED + k, disjoint from the bench

# method -> (config field that tuning sets, config field holding its grid)
PARAMS = {
    "SigKer-CI": ("ridge", "ridge_grid"),
    "KCI-flat": ("kci_eps", "kci_eps_grid"),
    "ParCorr-incr": ("incr_window", "incr_window_grid"),
    "Granger": ("lags", "lags_grid"),
    "PCMCI": ("tau_max", "lags_grid"),
}
RULE = (
    "null data only: among grid values with validation type-I <= 0.10, the smallest "
    "Kolmogorov-Smirnov distance of the null p-values to U(0, 1); else the lowest type-I"
)


def edge_test(
    method: str,
    data: discovery.PathData,
    cfg: Config,
    seed: int,
    value: float | None = None,
    sig: discovery.SigKerTest | None = None,
) -> discovery.EdgeTest:
    """`method` as an edge test (i, j, S) -> p with hyperparameter `value` (default: cfg's).

    `sig` is a SigKerTest on the same data whose cached Grams SigKer-CI reuses.
    """
    v = getattr(cfg, PARAMS[method][0]) if value is None else value
    if method == "SigKer-CI":
        if sig is not None:
            return sig.at(ridge=v)
        return discovery.SigKerTest(data, cfg.refinement, cfg.n_perm, v, seed)
    if method == "KCI-flat":
        return baselines.KCIFlatTest(data, v)
    if method == "ParCorr-incr":
        return baselines.PartialCorrIncrementTest(data, v)
    if method == "Granger":
        return baselines.GrangerTest(data, int(v))
    if method == "PCMCI":
        return baselines.PCMCITest(data, int(v))
    raise ValueError(f"unknown method {method!r}; expected one of {sorted(PARAMS)}")


def validation_cases(cfg: Config) -> list[tuple[int, str, str]]:
    """(round, family, null triple) of every validation data set."""
    return list(itertools.product(range(cfg.tune_reps), sde.FAMILIES, NULL_TRIPLES))


def validation_pvalues(cfg: Config, index: int) -> dict[str, list[float]]:
    """p-value of every method at every grid value on validation data set `index`."""
    _, family, name = validation_cases(cfg)[index]
    graph, i, j, cond = NULL_TRIPLES[name]
    seed = VALIDATION_SEED + index
    data = make_data(graph, family, cfg, seed)
    sig = discovery.SigKerTest(data, cfg.refinement, cfg.n_perm, cfg.ridge, seed)
    return {
        m: [edge_test(m, data, cfg, seed, v, sig)(i, j, cond) for v in getattr(cfg, grid)]
        for m, (_, grid) in PARAMS.items()
    }


def choose(grid: list, pvalues: np.ndarray, alpha: float) -> dict:
    """Apply RULE to null p-values of shape (data sets, grid values)."""
    type1 = (pvalues < alpha).mean(0)
    ks = np.array([stats.kstest(pvalues[:, g], "uniform").statistic for g in range(len(grid))])
    ok = np.flatnonzero(type1 <= TYPE1_MAX)
    best = ok[np.argmin(ks[ok])] if len(ok) else int(np.lexsort((ks, type1))[0])
    return {
        "grid": list(grid),
        "type1": [float(v) for v in type1],
        "ks": [float(v) for v in ks],
        "chosen": grid[int(best)],
    }


def tune(cfg: Config, map_fn: Callable = map) -> dict:
    """Choose every method's hyperparameter on validation null data; the record for the JSON."""
    if cfg.tune_reps == 0:
        return {
            "rule": "untuned: the config's values",
            "methods": {m: {"param": f, "chosen": getattr(cfg, f)} for m, (f, _) in PARAMS.items()},
        }
    runs = list(map_fn(partial(validation_pvalues, cfg), range(len(validation_cases(cfg)))))
    methods = {}
    for m, (field, grid) in PARAMS.items():
        pv = np.array([run[m] for run in runs])
        methods[m] = {"param": field, **choose(list(getattr(cfg, grid)), pv, cfg.alpha)}
    return {
        "rule": RULE,
        "n_paths": cfg.n_paths,
        "datasets": len(runs),
        "seeds": f"{VALIDATION_SEED} + k, k < {len(runs)}",
        "methods": methods,
    }


def apply(cfg: Config, tuned: dict) -> Config:
    """cfg with every tuned hyperparameter set to its chosen value."""
    return dataclasses.replace(
        cfg, **{rec["param"]: rec["chosen"] for rec in tuned["methods"].values()}
    )
