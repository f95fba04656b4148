"""Benchmark: every method on three generated graphs over the preset's seeds, DeGEM's ablations
(which localise the recurrent-update failure), model selection side by side, and the claims.

Claims are computed from the per-seed AUROCs with the thresholds written below, as paired
differences over the same seeds with a Student-t interval; each claim carries a negative control
that the same check is run on. Epoch times come from the same run.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from . import baselines, data, figures
from .config import ABLATIONS, Config
from .degem import DeGEM, hop_features, normalized_adjacency
from .results import claim, paired_interval, read_json, results_document, summarize, write_results
from .runtime import results_dir_of
from .stats import fmt_interval
from .tracking import radial_analysis, trace_summary
from .train import CONTROLS, METHODS, SELECTED, resolve, train_and_evaluate

PAPER = "degem"
GRAPHS = {  # name -> (edge homophily, where inter-class edges go)
    "homophilic": (0.8, "random"),
    # Class c links to c +- 1 only: heterophilic, but the edges carry label information (a GCN
    # beats a feature MLP here), so a loss of GNNSafe is not just edges being noise.
    "heterophilic": (0.2, "cyclic"),
    # With 5 classes h = 0.2 at random mixing makes the edges independent of the labels.
    "heterophilic-random": (0.2, "random"),
}
HETERO = "heterophilic"
RANDOM = "heterophilic-random"
ABLATION_GRAPHS = ("homophilic", "heterophilic")
# Variants that cost 5-10 quick runs each (20 SGLD-backed head steps per epoch; width 512) run on
# the first ablation seed only, to keep the paper preset within its time budget.
ONE_SEED_ABLATIONS = ("head_steps=20", "official-512")
# The official head (separate batch norm, dropout 0.5, DGI gradient through p) runs on every seed,
# so that the two DeGEM claims can be repeated, paired, on the paper's own head (`by_variant`).
EVERY_SEED_ABLATIONS = ("official",)
TABLE_METHODS = [*METHODS, *SELECTED, *CONTROLS]

# Claim thresholds; the comment says what result fails each one.
GNNSAFE_MIN_DROP = 15.0  # fails if GNNSafe loses < 15 average AUROC points hom -> het
DEGEM_MAX_DROP = 5.0  # fails if DeGEM loses > 5 points over the same change ...
DEGEM_MIN_HOMOPHILIC = 60.0  # ... or sits below 60 on the homophilic graph (chance loses nothing)
MIN_MARGIN = 10.0  # fails if DeGEM leads GNNSafe by < 10 points on the heterophilic graph, or the
# interval of the paired lead reaches 0


def ablation_name(name: str) -> str:
    return f"DeGEM[{name}]"


def _vals(metrics: dict, method: str, graph: str, key: str = "avg_auroc") -> np.ndarray:
    return np.asarray(metrics[method][f"{graph}/{key}"]["values"])


def _drop_check(metrics, method: str, to: str = HETERO) -> tuple[dict, bool]:
    d = paired_interval(_vals(metrics, method, "homophilic"), _vals(metrics, method, to))
    return d, d["mean"] >= GNNSAFE_MIN_DROP


def _stable_check(metrics, method: str) -> tuple[dict, bool]:
    d = paired_interval(_vals(metrics, method, "homophilic"), _vals(metrics, method, HETERO))
    hom = float(_vals(metrics, method, "homophilic").mean())
    return d, d["mean"] <= DEGEM_MAX_DROP and hom >= DEGEM_MIN_HOMOPHILIC


def _beats_check(metrics, method: str) -> tuple[dict, bool]:
    d = paired_interval(_vals(metrics, method, HETERO), _vals(metrics, "GNNSafe", HETERO))
    return d, d["mean"] >= MIN_MARGIN and d["lo"] is not None and d["lo"] > 0


def _prop_check(metrics, graph: str) -> tuple[dict, bool]:
    d = paired_interval(_vals(metrics, "GNNSafe", graph), _vals(metrics, "Energy", graph))
    return d, d["hi"] is not None and d["hi"] < 0  # fails unless the interval lies below 0


def _mean(metrics, method, graph) -> float:
    return float(_vals(metrics, method, graph).mean())


def compute_claims(metrics: dict) -> list[dict]:
    """The claims, each decided by a threshold on per-seed AUROCs, with a negative control."""
    out = []
    d, holds = _drop_check(metrics, "GNNSafe")
    ctrl, ctrl_holds = _drop_check(metrics, "Oracle")
    rand, rand_holds = _drop_check(metrics, "GNNSafe", RANDOM)
    out.append(
        claim(
            "gnnsafe-drops-on-heterophily",
            f"GNNSafe loses >= {GNNSAFE_MIN_DROP:.0f} average AUROC points from the homophilic "
            "graph (h=0.8) to the heterophilic graph whose edges carry the labels (h=0.2, cyclic)",
            "88.73 -> 55.23 (homophilic vs heterophilic benchmark averages, -33.5)",
            f"{_mean(metrics, 'GNNSafe', 'homophilic'):.2f} -> "
            f"{_mean(metrics, 'GNNSafe', HETERO):.2f}: drop {fmt_interval(d)}",
            holds,
            negative_control={
                "what": "the same check on the generative oracle (true ID likelihood): a drop "
                "here would mean the heterophilic graph is harder for any detector",
                "ours": f"drop {fmt_interval(ctrl)}",
                "holds": ctrl_holds,
            },
            reported={
                f"{RANDOM} (edges independent of the labels)": {
                    "GNNSafe drop": fmt_interval(rand),
                    "holds": rand_holds,
                    "Oracle drop": fmt_interval(_drop_check(metrics, "Oracle", RANDOM)[0]),
                }
            },
        )
    )
    d, holds = _prop_check(metrics, HETERO)
    ctrl, ctrl_holds = _prop_check(metrics, "homophilic")
    out.append(
        claim(
            "propagation-hurts-on-heterophily",
            "On the heterophilic graph GNNSafe's energy propagation lowers the AUROC of the same "
            "GCN's energy score: paired GNNSafe - Energy interval below 0",
            "GNNSafe 55.23 vs Energy 70.01 (heterophilic averages, -14.78); homophilic +2.27",
            f"GNNSafe - Energy {fmt_interval(d)}",
            holds,
            negative_control={
                "what": "the same check on the homophilic graph, where propagation should help",
                "ours": f"GNNSafe - Energy {fmt_interval(ctrl)}",
                "holds": ctrl_holds,
            },
            reported={"GNNSafe - Energy per shift": _prop_by_shift(metrics)},
        )
    )
    d, holds = _stable_check(metrics, "DeGEM")
    ctrl, ctrl_holds = _stable_check(metrics, "DeGEM[untrained]")
    out.append(
        claim(
            "degem-stable-on-heterophily",
            f"DeGEM (last epoch) loses <= {DEGEM_MAX_DROP:.0f} average AUROC points over the same "
            f"change, from a homophilic average of at least {DEGEM_MIN_HOMOPHILIC:.0f}",
            "97.08 -> 97.55 (+0.47)",
            f"{_mean(metrics, 'DeGEM', 'homophilic'):.2f} -> {_mean(metrics, 'DeGEM', HETERO):.2f}"
            f": drop {fmt_interval(d)}",
            holds,
            negative_control={
                "what": "the same check on DeGEM at initialisation (untrained)",
                "ours": f"{_mean(metrics, 'DeGEM[untrained]', 'homophilic'):.2f} -> "
                f"{_mean(metrics, 'DeGEM[untrained]', HETERO):.2f}: drop {fmt_interval(ctrl)}",
                "holds": ctrl_holds,
            },
            by_selection=_by_selection(metrics, _stable_check),
            by_variant=_by_variant(metrics, _stable_check),
        )
    )
    d, holds = _beats_check(metrics, "DeGEM")
    ctrl, ctrl_holds = _beats_check(metrics, "DeGEM[untrained]")
    out.append(
        claim(
            "degem-beats-gnnsafe-heterophilic",
            f"On the heterophilic graph DeGEM (last epoch) beats GNNSafe by >= {MIN_MARGIN:.0f} "
            "AUROC points averaged over the structure, feature and label shifts (paired interval "
            "above 0)",
            "97.55 vs 55.23 (+42.3)",
            f"{_mean(metrics, 'DeGEM', HETERO):.2f} vs {_mean(metrics, 'GNNSafe', HETERO):.2f}: "
            f"DeGEM - GNNSafe {fmt_interval(d)}",
            holds,
            negative_control={
                "what": "the same check on DeGEM at initialisation (untrained)",
                "ours": f"DeGEM[untrained] - GNNSafe {fmt_interval(ctrl)}",
                "holds": ctrl_holds,
            },
            by_selection=_by_selection(metrics, _beats_check),
            by_variant=_by_variant(metrics, _beats_check),
        )
    )
    return out


def _by_selection(metrics, check) -> dict:
    """The same check on DeGEM at the epoch chosen on validation data and on test OOD AUROC."""
    out = {}
    for name in SELECTED:
        d, holds = check(metrics, name)
        out[name] = {"value": fmt_interval(d), "holds": holds}
    return out


def _by_variant(metrics, check) -> dict:
    """The same check on each DeGEM variant that ran on every seed (EVERY_SEED_ABLATIONS)."""
    out = {}
    n = len(_vals(metrics, "DeGEM", HETERO))
    for name in map(ablation_name, EVERY_SEED_ABLATIONS):
        if name in metrics and len(_vals(metrics, name, HETERO)) == n:
            d, holds = check(metrics, name)
            hom, het = _mean(metrics, name, "homophilic"), _mean(metrics, name, HETERO)
            out[name] = {"averages": f"{hom:.2f} -> {het:.2f}", "value": fmt_interval(d)}
            out[name]["holds"] = holds
    return out


def _prop_by_shift(metrics) -> dict:
    """Paired GNNSafe - Energy AUROC per shift on the homophilic and heterophilic graphs."""
    return {
        gr: {
            s: fmt_interval(
                paired_interval(
                    _vals(metrics, "GNNSafe", gr, f"{s}_auroc"),
                    _vals(metrics, "Energy", gr, f"{s}_auroc"),
                )
            )
            for s in ("structure", "feature", "label")
        }
        for gr in ("homophilic", HETERO)
    }


def _time_epochs(step, reps: int) -> float:
    step()  # warm-up
    start = time.perf_counter()
    for _ in range(reps):
        step()
    return (time.perf_counter() - start) / reps


def epoch_times(cfg: Config, reps: int = 20) -> dict[str, float]:
    """Seconds per training epoch on one heterophilic graph: DeGEM (cached / recomputed hops), GCN."""
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    h, pattern = GRAPHS[HETERO]
    g = data.csbm(
        cfg.n_nodes, cfg.n_classes, cfg.feat_dim, cfg.class_sep, cfg.mean_degree, h, pattern,
        cfg.seed,
    )  # fmt: skip
    train = data.split(g.y, (), cfg.train_frac, cfg.seed)[0]
    adj = normalized_adjacency(g.edge_index, g.n)
    cached = hop_features(g.x, adj, cfg.hops, cfg.beta)
    model = DeGEM(g.x.shape[1], cfg.n_classes, cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)

    def degem_step(recompute: bool):
        hops_x = hop_features(g.x, adj, cfg.hops, cfg.beta) if recompute else cached
        opt.zero_grad()
        model.loss(hops_x, g.x, adj, train, g.y)["loss"].backward()
        opt.step()

    gcn = baselines.GCN(g.x.shape[1], cfg.gcn_hidden, cfg.n_classes, cfg.dropout)
    gopt = torch.optim.Adam(gcn.parameters(), lr=cfg.gcn_lr)

    def gcn_step():
        gopt.zero_grad()
        F.cross_entropy(gcn(g.x, g.edge_index)[train], g.y[train]).backward()
        gopt.step()

    return {
        "degem_cached": _time_epochs(lambda: degem_step(False), reps),
        "degem_recompute": _time_epochs(lambda: degem_step(True), reps),
        "gcn": _time_epochs(gcn_step, reps),
    }


def _collect(per_method: dict, out: dict, gr: str, rename: dict[str, str]) -> None:
    for key, value in out.items():
        method, _, metric = key.partition("/")
        if method in rename:
            per_method.setdefault(rename[method], {}).setdefault(f"{gr}/{metric}", []).append(value)


def _run(cfg: Config, gr: str, seed: int, workdir: Path, **overrides) -> tuple[dict, dict]:
    """One run; with overrides (an ablation) only DeGEM is trained."""
    h, pattern = GRAPHS[gr]
    run_cfg = dataclasses.replace(cfg, seed=seed, homophily=h, pattern=pattern, **overrides)
    out = train_and_evaluate(run_cfg, workdir, degem_only=bool(overrides))
    return out, read_json(workdir / "trace.json", "run trace")


def _ablation_seeds(cfg: Config, name: str) -> tuple[int, ...]:
    if name in EVERY_SEED_ABLATIONS:
        return cfg.seeds
    seeds = cfg.seeds[: cfg.ablation_seeds]
    return seeds[:1] if name in ONE_SEED_ABLATIONS else seeds


def _performance(cfg: Config, times: dict) -> list[dict]:
    return [
        {
            "id": "epoch-degem-vs-gnnsafe",
            "what": f"seconds per training epoch, heterophilic graph n={cfg.n_nodes}",
            "unit": "s",
            "higher_is_better": False,
            "ours_value": round(times["degem_cached"], 5),
            "peer": "GNNSafe's 2-layer GCN (PyG GCNConv)",
            "peer_value": round(times["gcn"], 5),
        },
        {
            "id": "epoch-cached-hops",
            "what": f"DeGEM epoch with cached hop features vs recomputing them (K={cfg.hops})",
            "unit": "s",
            "higher_is_better": False,
            "ours_value": round(times["degem_cached"], 5),
            "peer": "DeGEM recomputing X^(k) every epoch",
            "peer_value": round(times["degem_recompute"], 5),
        },
    ]


def run_bench(cfg: Config) -> dict:
    """Run the preset, write <results-dir>/<name>.json and its figures, return the document."""
    if cfg.graph_file:
        raise ValueError("bench runs the generated graphs; use `degem train --graph-file` instead")
    cfg = resolve(cfg)
    start = time.perf_counter()
    runs = Path(cfg.out)
    prefix = "" if cfg.name == "quick" else f"{cfg.name}-"
    per_method: dict[str, dict[str, list[float]]] = {m: {} for m in TABLE_METHODS}
    per_method["graph"] = {}
    traces: dict[str, dict[str, dict]] = {gr: {} for gr in ABLATION_GRAPHS}
    for gr in GRAPHS:
        for seed in cfg.seeds:
            out, tr = _run(cfg, gr, seed, runs / gr / f"seed{seed}")
            _collect(per_method, out, gr, {m: m for m in [*TABLE_METHODS, "graph"]})
            if seed == cfg.seeds[0] and gr in traces:
                traces[gr]["default"] = tr
    ablation_seeds = cfg.seeds[: cfg.ablation_seeds]
    for name in cfg.ablations:
        for gr in ABLATION_GRAPHS:
            for seed in _ablation_seeds(cfg, name):
                wd = runs / "ablation" / name / gr / f"seed{seed}"
                out, tr = _run(cfg, gr, seed, wd, **ABLATIONS[name])
                rename = {"DeGEM": ablation_name(name), "DeGEM@test": f"DeGEM@test[{name}]"}
                _collect(per_method, out, gr, rename)
                if seed == cfg.seeds[0]:
                    traces[gr][name] = tr
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    times = epoch_times(cfg)
    ablated = ["DeGEM", *(ablation_name(n) for n in cfg.ablations)]
    figs = {
        f"{prefix}auroc.png": figures.plot_auroc(
            metrics, GRAPHS, ["DeGEM", "DeGEM@test", "LatentGauss", "GNNSafe", "Energy", "Oracle"]
        ),
        f"{prefix}selection.png": figures.plot_selection(metrics, list(GRAPHS)),
        f"{prefix}mechanism.png": figures.plot_mechanism(traces),
    }
    if cfg.ablations and ablation_seeds:
        figs[f"{prefix}ablation.png"] = figures.plot_ablation(
            metrics, ablated, list(ABLATION_GRAPHS), len(ablation_seeds)
        )
    doc = results_document(
        PAPER, cfg.name, list(cfg.seeds), metrics, compute_claims(metrics),
        time.perf_counter() - start, cfg.device, _performance(cfg, times),
    )  # fmt: skip
    doc["graphs"] = {gr: {"homophily": h, "pattern": p} for gr, (h, p) in GRAPHS.items()}
    doc["ablation"] = {
        "what": "DeGEM variants, last epoch (and @test), reported only, no claim",
        "variants": {ablation_name(n): ABLATIONS[n] for n in cfg.ablations},
        "graphs": list(ABLATION_GRAPHS),
        "seeds": list(ablation_seeds),
        "first_seed_only": [n for n in cfg.ablations if n in ONE_SEED_ABLATIONS],
        "every_seed": [n for n in cfg.ablations if n in EVERY_SEED_ABLATIONS],
    }
    doc["tuning"] = {
        "what": "no method's hyper-parameters are tuned (all use the official / paper values); "
        "the only per-run choice is the epoch, made on ID validation data for every method",
        "grid": {"epoch": f"1..{cfg.epochs}"},
        "criterion": {
            "GCN (MSP, Energy, GNNSafe)": "validation accuracy",
            "DeGEM": "none: last epoch",
            "DeGEM@val": "validation accuracy + AUROC of -E, validation nodes vs U[0,1)^d",
            "DeGEM@test": "official main.py: test OOD AUROC + test accuracy (leaks; reported only)",
        },
    }
    doc["diagnostics"] = {
        "what": "per-epoch traces of DeGEM variants on the first seed (tracking.EpochTracker)",
        "seed": cfg.seeds[0],
        "summary": {
            gr: {name: trace_summary(tr) for name, tr in v.items()} for gr, v in traces.items()
        },
        "trace": {
            gr: {
                name: {k: [round(x, 4) for x in tr[k]] for k in ("auroc_structure", "p_ess")}
                for name, tr in v.items()
            }
            for gr, v in traces.items()
        },
    }
    doc["diagnostics"]["radial"] = radial_analysis(metrics, ABLATION_GRAPHS, GRAPHS)
    write_results(results_dir_of(cfg), cfg.name, doc, figs)
    return doc
