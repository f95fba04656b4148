"""The fitted world of one seed and every recourse method as `runner(x_neg) -> x_cf`.

`fit_world` builds the semi-synthetic ground truth, the audited classifier h, D- and D+, the
LOF plausibility models and the splits; `make_runner` turns a method name and its one tuned
knob into a function of the negatives; `tune` picks that knob on the validation negatives by
the paper's Score with the same three-value budget for every tunable method (GRIDS).
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import time
import warnings
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from . import baselines, classifiers, data, metrics
from .binned_transformer import PairTransformer, genre_recourse
from .config import CONTROL, FLOOR, ORACLE, Config, table_of
from .pairs import q_recourse

# One knob per method, three values each (the paper's / the method's default is in each grid).
GRIDS: dict[str, tuple[str, tuple[float, ...]]] = {
    "GenRe": ("temperature", (3.0, 10.0, 30.0)),
    "Wachter": ("lam_start", (10.0, 1.0, 0.1)),
    "REVISE": ("lam_start", (10.0, 1.0, 0.1)),
    "GrowingSpheres": ("eta", (0.02, 0.05, 0.1)),
    "DiCE": ("stopping_threshold", (0.5, 0.7, 0.9)),
}
NOT_TUNED = {
    "NNR": "no hyperparameter",
    ORACLE: "the fixed training target Q at the configured lambda",
    FLOOR: "a uniform admissible positive, no hyperparameter",
    CONTROL: "uses GenRe's tuned temperature",
}


@dataclasses.dataclass
class World:
    """Everything of one seed that the methods and the metrics share."""

    cfg: Config
    tab: data.Tabular
    x: np.ndarray
    y: np.ndarray
    train: np.ndarray
    test: np.ndarray
    gold: Any
    h: torch.nn.Module
    x_pos: torch.Tensor
    neg_mask: np.ndarray
    lofs: dict
    knn: metrics.KnnPlausibility
    negatives: np.ndarray
    val_negatives: np.ndarray
    immutable: torch.Tensor
    categorical: torch.Tensor
    models: dict = dataclasses.field(default_factory=dict)
    extras: dict = dataclasses.field(default_factory=dict)

    def xt(self, rows: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(self.x[rows])


def fit_world(cfg: Config) -> World:
    """Gold model on all rows, resampled labels, 75/25 split, h on the training rows, D+, the
    two LOF fit sets, and the evaluated / validation test negatives (h(x) < 0.5)."""
    table = table_of(cfg, cfg.dataset)
    tab = data.load(cfg.dataset, table.path, table.schema, cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    x, y0 = tab.x, tab.y
    if cfg.max_rows and len(x) > cfg.max_rows:
        keep = rng.choice(len(x), cfg.max_rows, replace=False)
        print(
            f"note: {cfg.dataset}: using a random {cfg.max_rows} of its {len(x)} rows "
            f"(--max-rows {cfg.max_rows}; 0 keeps every row)",
            file=sys.stderr,
        )
        x, y0 = x[keep], y0[keep]
    if len(np.unique(y0)) < 2:
        raise ValueError(f"dataset {cfg.dataset!r} has a single label; need both 0 and 1")
    gold = classifiers.fit_gold(x, y0, cfg.rf_trees, cfg.seed)  # on all rows: ground truth
    p_gold = classifiers.gold_proba(gold, x)
    y = classifiers.resample_labels(p_gold, cfg.seed)
    order = rng.permutation(len(x))
    n_train = round((1 - cfg.test_fraction) * len(x))
    tr, te = order[:n_train], order[n_train:]
    h = classifiers.train_classifier(x[tr], y[tr], cfg.clf_epochs, cfg.seed, cfg.clf_balanced)
    with torch.no_grad():
        p_h = h(torch.as_tensor(x)).numpy()
    neg_mask, pos_mask = p_h[tr] <= cfg.gamma, (p_h[tr] > cfg.gamma) & (y[tr] == 1)
    if not pos_mask.any():
        raise ValueError(
            f"D+ is empty: no training point has h > gamma = {cfg.gamma} and y = 1 "
            "(train the classifier longer or lower --gamma)"
        )
    # LOF's fit set: the official notebook fits on train + test rows the gold model calls
    # positive; "train" restricts it to the training rows.
    fit_sets = {"all": x[p_gold > 0.5], "train": x[tr][p_gold[tr] > 0.5]}
    other = "train" if cfg.lof_fit == "all" else "all"
    lofs = {"lof": metrics.fit_lof(fit_sets[cfg.lof_fit])}
    lofs[f"lof_{other}_fit"] = metrics.fit_lof(fit_sets[other])
    # kNN plausibility: depth among held-out (test) gold positives, against training ones
    knn = metrics.KnnPlausibility(x[te][p_gold[te] > 0.5], x[tr][p_gold[tr] > 0.5])
    test_neg = te[p_h[te] < 0.5]
    if len(test_neg) == 0:
        raise ValueError("the classifier calls no test point negative; nothing to explain")
    negatives = test_neg[: cfg.n_negatives]
    val_negatives = test_neg[cfg.n_negatives : cfg.n_negatives + cfg.n_val_negatives]
    return World(
        cfg=cfg,
        tab=tab,
        x=x,
        y=y,
        train=tr,
        test=te,
        gold=gold,
        h=h,
        x_pos=torch.as_tensor(x[tr][pos_mask]),
        neg_mask=neg_mask,
        lofs=lofs,
        knn=knn,
        negatives=negatives,
        val_negatives=val_negatives,
        immutable=torch.as_tensor(tab.immutable),
        categorical=torch.as_tensor(tab.categorical),
    )


def generator(cfg: Config, *names: str) -> torch.Generator:
    """A generator per (seed, method, phase): a method's draws do not depend on which other
    methods ran before it."""
    return torch.Generator().manual_seed(cfg.seed * 100003 + zlib.crc32("/".join(names).encode()))


def _schedule(start: float, steps: int) -> tuple[float, ...]:
    return tuple(start * 10.0**-i for i in range(steps))


def default_value(cfg: Config, method: str) -> float | None:
    return {
        "GenRe": cfg.temperature,
        CONTROL: cfg.temperature,
        "GenRe-nocache": cfg.temperature,
        "Wachter": 1.0,
        "REVISE": 1.0,
        "GrowingSpheres": 0.05,
        "DiCE": 0.5,
        ORACLE: cfg.lam,
    }.get(method)


def make_runner(w: World, method: str, value: float | None, phase: str = "eval") -> Callable:
    """The recourse function of `method` with its knob set to `value`."""
    cfg, imm, cat = w.cfg, w.immutable, w.categorical
    g = generator(cfg, method, phase)
    if method in ("GenRe", CONTROL, "GenRe-nocache"):
        model = w.models[CONTROL if method == CONTROL else "GenRe"]
        if "h_dev" not in w.extras:
            w.extras["h_dev"] = copy.deepcopy(w.h).to(cfg.device)
        h_dev = w.extras["h_dev"]
        return lambda xn: genre_recourse(
            model,
            h_dev,
            xn.to(cfg.device),
            imm,
            cat,
            value,
            cfg.best_k,
            g if cfg.device == "cpu" else None,
            kv_cache=cfg.kv_cache and method != "GenRe-nocache",
        ).cpu()
    if method == "NNR":
        return lambda xn: baselines.nnr(xn, w.x_pos, imm)
    if method == ORACLE:
        return lambda xn: q_recourse(xn, w.x_pos, value, cfg.top_k, imm, cat, w.h, cfg.best_k, g)
    if method == FLOOR:
        return lambda xn: q_recourse(xn, w.x_pos, 0.0, len(w.x_pos), imm, cat, w.h, 1, g)
    if method == "Wachter":
        return lambda xn: baselines.wachter(xn, w.h, imm, cat, lams=_schedule(value, 4))
    if method == "GrowingSpheres":
        return lambda xn: baselines.growing_spheres(xn, w.h, imm, cat, g, eta=value)
    if method == "REVISE":
        vae = w.models["VAE"]
        return lambda xn: baselines.revise(xn, w.h, vae, imm, cat, lams=_schedule(value, 3))
    if method == "DiCE":
        if "DiCE" not in w.models:
            w.models["DiCE"] = baselines.Dice(
                w.x[w.train],
                w.y[w.train],
                w.h,
                list(w.tab.features),
                w.tab.immutable,
                w.tab.categorical,
            )
        dice = w.models["DiCE"]
        return lambda xn: torch.as_tensor(dice(xn.numpy(), cfg.seed, value))
    raise ValueError(f"unknown method {method!r}")


def evaluate(w: World, x_neg: torch.Tensor, cf: torch.Tensor) -> dict[str, np.ndarray]:
    """Per-recourse metrics of the paper (gold validity, LOF on both fit sets, cost, Score) and
    the kNN plausibility."""
    cf = cf.detach().cpu().numpy()
    with torch.no_grad():
        p_h = w.h(torch.as_tensor(cf)).numpy()
    return metrics.per_instance(
        x_neg.numpy(),
        cf,
        classifiers.gold_proba(w.gold, cf),
        p_h,
        w.lofs,
        w.tab.immutable,
        w.tab.categorical,
        w.knn,
    )


def rows_for(w: World, method: str, rows: np.ndarray) -> np.ndarray:
    return rows[: w.cfg.dice_negatives] if method == "DiCE" else rows


def tune(w: World, method: str) -> dict:
    """Pick the grid value with the highest mean Score on the validation negatives."""
    if method not in GRIDS:
        return {"value": default_value(w.cfg, method), "why": NOT_TUNED.get(method, "")}
    knob, grid = GRIDS[method]
    rows = rows_for(w, method, w.val_negatives)
    if not w.cfg.tune or len(rows) < 5:
        if w.cfg.tune:
            warnings.warn(
                f"only {len(rows)} validation negatives: {method} keeps its default {knob}",
                stacklevel=2,
            )
        return {"knob": knob, "value": default_value(w.cfg, method), "why": "not tuned"}
    xv = w.xt(rows)
    scores = []
    for value in grid:
        cf = make_runner(w, method, value, phase=f"tune{value}")(xv)
        scores.append(float(evaluate(w, xv, cf)["score"].mean()))
    return {
        "knob": knob,
        "grid": list(grid),
        "val_scores": scores,
        "value": grid[int(np.argmax(scores))],
        "n_val": len(rows),
    }


def time_per_instance(runner: Callable, xs: torch.Tensor) -> tuple[np.ndarray, torch.Tensor]:
    """Explain the rows one at a time (batch of 1); seconds per row and the recourses."""
    seconds, outs = [], []
    for i in range(len(xs)):
        start = time.perf_counter()
        outs.append(runner(xs[i : i + 1]))
        seconds.append(time.perf_counter() - start)
    return np.array(seconds), torch.cat(outs)


def new_pair_model(cfg: Config, d: int) -> PairTransformer:
    torch.manual_seed(cfg.seed)
    return PairTransformer(
        d,
        cfg.n_bins,
        cfg.d_model,
        cfg.n_heads,
        cfg.n_layers,
        cfg.d_ff,
        cfg.dropout,
        cfg.variant,
    ).to(cfg.device)
