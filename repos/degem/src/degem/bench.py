"""Benchmark: every method on three graphs over the preset's seeds (generated ones at quick, the
paper's Cora / Actor / Cornell in the paper and full presets), DeGEM's ablations (which localise
the recurrent-update failure), model selection side by side, and the claims.

Claims are computed from the per-seed AUROCs with the thresholds written below, as paired
differences over the same seeds with a Student-t interval; each claim carries a negative control
that the same check is run on. Epoch times come from the same run.
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from . import baselines, data, figures
from .config import ABLATIONS, Config
from .degem import DeGEM, hop_features, normalized_adjacency
from .results import (
    claim,
    paired_interval,
    part_from_paired,
    read_json,
    results_document,
    summarize,
    verdict,
    write_results,
)
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
# Bundled real graphs (data/README.md) and the official label protocol (dataset.py, class_t):
# ID = classes above t, test OOD = classes below t, class t is left out (its OOD-exposure class).
DATA_DIR = Path(__file__).resolve().parents[2] / "data"
REAL = {
    "cora": ("planetoid/ind.cora.x", 3),
    "actor": ("geom-gcn/film", 1),
    "cornell": ("geom-gcn/cornell", 1),
}
ROLES = ("homophilic", HETERO)  # the claims' two graphs; a third is reported beside them
# How the claims name the generated graphs (their ids stay the earlier passes' ids).
GENERATED_NAMES = {
    "homophilic": "the generated h = 0.8 SBM",
    HETERO: "the generated cyclic h = 0.2 SBM",
}


def graph_path(name: str) -> str:
    """A bundled graph's file for its name (cora, actor, cornell); any other name is a path."""
    return str(DATA_DIR / REAL[name][0]) if name in REAL else name


def label_protocol(name: str, cfg: Config) -> dict:
    """ood_classes / ignore_classes of a bench graph: the official ones for a bundled graph,
    the run's own (--ood-classes, --ignore-classes) for any other file."""
    if name not in REAL:
        return {"ood_classes": cfg.ood_classes, "ignore_classes": cfg.ignore_classes}
    t = REAL[name][1]
    return {"ood_classes": tuple(range(t)), "ignore_classes": (t,)}


def bench_graphs(cfg: Config) -> dict[str, dict]:
    """role -> the Config fields of that graph: the generated graphs, or cfg.bench_graphs (2 or 3
    files: homophilic, heterophilic, and one reported beside them)."""
    if not cfg.bench_graphs:
        return {gr: {"homophily": h, "pattern": p} for gr, (h, p) in GRAPHS.items()}
    names = list(cfg.bench_graphs)
    roles = [*ROLES, f"{HETERO}-{Path(names[-1]).name}"][: len(names)]
    return {
        role: {"graph_file": graph_path(n), **label_protocol(n, cfg)}
        for role, n in zip(roles, names)
    }


def _portable(value):
    """A bench graph's field for the results file: tuples as lists, a bundled graph's path
    relative to the project (no machine path in the committed JSON)."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, str) and Path(value).is_relative_to(DATA_DIR):
        return str(Path(value).relative_to(DATA_DIR.parent))
    return value


def graph_names(cfg: Config) -> dict[str, str] | None:
    """role -> the name of the bench graph the claims read there (cora, actor, or a file's name);
    None for the generated graphs."""
    if not cfg.bench_graphs:
        return None
    return {role: Path(name).name for role, name in zip(bench_graphs(cfg), cfg.bench_graphs)}


def claim_ids(names: dict[str, str] | None) -> dict[str, str]:
    """The four claims' ids: the earlier passes' ids on the generated graphs, and ids that name
    the homophilic / heterophilic pair on graph files (gnnsafe-drops-cora-to-actor, ...)."""
    if names is None:
        return {
            "drop": "gnnsafe-drops-on-heterophily",
            "prop": "propagation-hurts-on-heterophily",
            "stable": "degem-stable-on-heterophily",
            "beats": "degem-beats-gnnsafe-heterophilic",
        }
    hom, het = (re.sub(r"[^a-z0-9]+", "-", names[r].lower()).strip("-") for r in ROLES)
    return {
        "drop": f"gnnsafe-drops-{hom}-to-{het}",
        "prop": f"propagation-hurts-on-{het}",
        "stable": f"degem-stable-{hom}-to-{het}",
        "beats": f"degem-beats-gnnsafe-on-{het}",
    }


def _labels(names: dict[str, str] | None) -> tuple[str, str]:
    """How the claims' statements name the homophilic and heterophilic graphs."""
    if names is None:
        return GENERATED_NAMES["homophilic"], GENERATED_NAMES[HETERO]
    hom, het = (names[r].capitalize() if names[r] in REAL else names[r] for r in ROLES)
    return f"{hom} (homophilic)", f"{het} (heterophilic)"


RANDOM = "heterophilic-random"
ABLATION_GRAPHS = ("homophilic", "heterophilic")
# Variants that cost 5-10 quick runs each (20 SGLD-backed head steps per epoch; width 512) run on
# the first ablation seed only, to keep the paper preset within its time budget.
ONE_SEED_ABLATIONS = ("head_steps=20", "hidden=512")
# The claims use the official head (separate batch norm, dropout 0.5, DGI gradient through p, the
# Config defaults); the project's earlier head (joint batch norm, no dropout, no gradient through
# p) runs on every seed as an ablation, so the two DeGEM claims are repeated on it (`by_variant`).
EVERY_SEED_ABLATIONS = ("joint-head",)
TABLE_METHODS = [*METHODS, *SELECTED, *CONTROLS]

# Claim thresholds; the comment says what result fails each one.
GNNSAFE_MIN_DROP = 15.0  # fails if GNNSafe loses < 15 average AUROC points hom -> het
DEGEM_MAX_DROP = 5.0  # fails if DeGEM loses > 5 points over the same change ...
DEGEM_MIN_HOMOPHILIC = 60.0  # ... or sits below 60 on the homophilic graph (chance loses nothing)
MIN_MARGIN = 10.0  # fails if DeGEM leads GNNSafe by < 10 points on the heterophilic graph, or the
# interval of the paired lead reaches 10
UNIT = "AUROC points"


def ablation_name(name: str) -> str:
    return f"DeGEM[{name}]"


def _vals(metrics: dict, method: str, graph: str, key: str = "avg_auroc") -> np.ndarray:
    return np.asarray(metrics[method][f"{graph}/{key}"]["values"])


def _seedwise(metrics, method: str, graph: str) -> dict:
    """A one-sample t interval of a method's per-seed average AUROC (paired against 0)."""
    v = _vals(metrics, method, graph)
    return paired_interval(v, np.zeros_like(v))


def _drop_parts(metrics, method: str, to: str = HETERO) -> tuple[dict, list[dict]]:
    d = paired_interval(_vals(metrics, method, "homophilic"), _vals(metrics, method, to))
    what = f"{method} average AUROC, homophilic - {to}"
    return d, [part_from_paired(what, d, GNNSAFE_MIN_DROP, ">", UNIT)]


def _stable_parts(metrics, method: str) -> tuple[dict, list[dict]]:
    d = paired_interval(_vals(metrics, method, "homophilic"), _vals(metrics, method, HETERO))
    return d, [
        part_from_paired(
            f"{method} average AUROC, homophilic - {HETERO}", d, DEGEM_MAX_DROP, "<", UNIT
        ),
        part_from_paired(
            f"{method} average AUROC on the homophilic graph (above chance)",
            _seedwise(metrics, method, "homophilic"),
            DEGEM_MIN_HOMOPHILIC,
            ">",
            UNIT,
        ),
    ]


def _beats_parts(metrics, method: str) -> tuple[dict, list[dict]]:
    d = paired_interval(_vals(metrics, method, HETERO), _vals(metrics, "GNNSafe", HETERO))
    return d, [
        part_from_paired(f"{method} - GNNSafe average AUROC, {HETERO}", d, MIN_MARGIN, ">", UNIT)
    ]


def _prop_parts(metrics, graph: str) -> tuple[dict, list[dict]]:
    d = paired_interval(_vals(metrics, "GNNSafe", graph), _vals(metrics, "Energy", graph))
    return d, [part_from_paired(f"GNNSafe - Energy average AUROC, {graph}", d, 0.0, "<", UNIT)]


def _control(what: str, ours: str, parts: list[dict]) -> dict:
    """A negative control: the claim's own test on something that must not pass it."""
    v = verdict(parts)
    return {
        "what": what,
        "ours": ours,
        "test": parts,
        "verdict": v,
        "must": "not holds",
        "holds": v == "holds",
    }


def _mean(metrics, method, graph) -> float:
    return float(_vals(metrics, method, graph).mean())


def compute_claims(metrics: dict, names: dict[str, str] | None = None) -> list[dict]:
    """The claims, each a structured test on per-seed AUROCs (three-way verdict), with a negative
    control run through the same test. names (graph_names): role -> the bench graph read there,
    None for the generated graphs; it names the claims' ids and graphs, never their numbers."""
    ids, (hom, het) = claim_ids(names), _labels(names)
    out = []
    d, parts = _drop_parts(metrics, "GNNSafe")
    floor = "Oracle" if "Oracle" in metrics else "DeGEM[untrained]"  # no oracle on real graphs
    ctrl, ctrl_parts = _drop_parts(metrics, floor)
    extra = sorted(_graphs_of(metrics) - {*ROLES, "graph"})
    out.append(
        claim(
            ids["drop"],
            f"GNNSafe loses more than {GNNSAFE_MIN_DROP:.0f} average AUROC points from {hom} "
            f"to {het} (paired interval above the threshold)",
            "88.73 -> 55.23 (homophilic vs heterophilic benchmark averages, -33.5)",
            f"{_mean(metrics, 'GNNSafe', 'homophilic'):.2f} -> "
            f"{_mean(metrics, 'GNNSafe', HETERO):.2f}: drop {fmt_interval(d)}",
            test=parts,
            negative_control=_control(
                f"the same test on {floor} (the generative oracle, true ID likelihood, on "
                "generated graphs; DeGEM untrained on real ones), which must not hold: a drop "
                "there would mean the heterophilic graph is harder for any detector",
                f"drop {fmt_interval(ctrl)}",
                ctrl_parts,
            ),
            reported={
                gr: {
                    "GNNSafe drop": fmt_interval(_drop_parts(metrics, "GNNSafe", gr)[0]),
                    "verdict": verdict(_drop_parts(metrics, "GNNSafe", gr)[1]),
                    f"{floor} drop": fmt_interval(_drop_parts(metrics, floor, gr)[0]),
                }
                for gr in extra
            },
        )
    )
    d, parts = _prop_parts(metrics, HETERO)
    ctrl, ctrl_parts = _prop_parts(metrics, "homophilic")
    out.append(
        claim(
            ids["prop"],
            f"On {het} GNNSafe's energy propagation lowers the AUROC of the same GCN's energy "
            "score: paired GNNSafe - Energy interval below 0",
            "GNNSafe 55.23 vs Energy 70.01 (heterophilic averages, -14.78); homophilic +2.27",
            f"GNNSafe - Energy {fmt_interval(d)}",
            test=parts,
            negative_control=_control(
                f"the same test on {hom}, where propagation should help (must not hold)",
                f"GNNSafe - Energy {fmt_interval(ctrl)}",
                ctrl_parts,
            ),
            reported={"GNNSafe - Energy per shift": _prop_by_shift(metrics)},
        )
    )
    d, parts = _stable_parts(metrics, "DeGEM")
    ctrl, ctrl_parts = _stable_parts(metrics, "DeGEM[untrained]")
    out.append(
        claim(
            ids["stable"],
            f"DeGEM (last epoch) loses less than {DEGEM_MAX_DROP:.0f} average AUROC points from "
            f"{hom} to {het} (paired interval below {DEGEM_MAX_DROP:.0f}), from an average above "
            f"{DEGEM_MIN_HOMOPHILIC:.0f} on {hom} (interval above it)",
            "97.08 -> 97.55 (+0.47)",
            f"{_mean(metrics, 'DeGEM', 'homophilic'):.2f} -> {_mean(metrics, 'DeGEM', HETERO):.2f}"
            f": drop {fmt_interval(d)}",
            test=parts,
            negative_control=_control(
                "the same test on DeGEM at initialisation (untrained; must not hold)",
                f"{_mean(metrics, 'DeGEM[untrained]', 'homophilic'):.2f} -> "
                f"{_mean(metrics, 'DeGEM[untrained]', HETERO):.2f}: drop {fmt_interval(ctrl)}",
                ctrl_parts,
            ),
            by_selection=_by_selection(metrics, _stable_parts),
            by_variant=_by_variant(metrics, _stable_parts),
        )
    )
    d, parts = _beats_parts(metrics, "DeGEM")
    ctrl, ctrl_parts = _beats_parts(metrics, "DeGEM[untrained]")
    out.append(
        claim(
            ids["beats"],
            f"On {het} DeGEM (last epoch) beats GNNSafe by more than "
            f"{MIN_MARGIN:.0f} AUROC points averaged over the structure, feature and label shifts "
            "(paired interval above the margin)",
            "97.55 vs 55.23 (+42.3)",
            f"{_mean(metrics, 'DeGEM', HETERO):.2f} vs {_mean(metrics, 'GNNSafe', HETERO):.2f}: "
            f"DeGEM - GNNSafe {fmt_interval(d)}",
            test=parts,
            negative_control=_control(
                "the same test on DeGEM at initialisation (untrained; must not hold)",
                f"DeGEM[untrained] - GNNSafe {fmt_interval(ctrl)}",
                ctrl_parts,
            ),
            by_selection=_by_selection(metrics, _beats_parts),
            by_variant=_by_variant(metrics, _beats_parts),
        )
    )
    return out


def _graphs_of(metrics: dict) -> set[str]:
    """The graphs the metrics were measured on (from DeGEM's keys)."""
    return {k.partition("/")[0] for k in metrics["GNNSafe"]}


def _side(metrics, check, method: str) -> dict:
    d, parts = check(metrics, method)
    v = verdict(parts)
    return {"value": fmt_interval(d), "test": parts, "verdict": v, "holds": v == "holds"}


def _by_selection(metrics, check) -> dict:
    """The same test on DeGEM at the epoch chosen on validation data and on test OOD AUROC."""
    return {name: _side(metrics, check, name) for name in SELECTED}


def _by_variant(metrics, check) -> dict:
    """The same test on each DeGEM variant that ran on every seed (EVERY_SEED_ABLATIONS)."""
    out = {}
    n = len(_vals(metrics, "DeGEM", HETERO))
    for name in map(ablation_name, EVERY_SEED_ABLATIONS):
        if name in metrics and len(_vals(metrics, name, HETERO)) == n:
            hom, het = _mean(metrics, name, "homophilic"), _mean(metrics, name, HETERO)
            out[name] = {"averages": f"{hom:.2f} -> {het:.2f}", **_side(metrics, check, name)}
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


def timing_graph(cfg: Config) -> tuple[data.Graph, str]:
    """The bench's heterophilic graph (the generated cyclic one, or its second bench graph) and
    how the performance rows name it."""
    torch.manual_seed(cfg.seed)
    if cfg.bench_graphs:
        name = cfg.bench_graphs[1]
        g = data.load_graph(graph_path(name), cfg.normalize_features)
        return g, f"{Path(name).name}, n={g.n}"
    h, pattern = GRAPHS[HETERO]
    g = data.csbm(
        cfg.n_nodes, cfg.n_classes, cfg.feat_dim, cfg.class_sep, cfg.mean_degree, h, pattern,
        cfg.seed,
    )  # fmt: skip
    return g, f"cyclic graph n={g.n}"


def epoch_times(cfg: Config, reps: int = 20) -> tuple[dict[str, float], str]:
    """Seconds per training epoch on the bench's heterophilic graph: DeGEM (cached / recomputed
    hops), GCN (reps epochs each after a warm-up); and the graph's name."""
    torch.set_num_threads(cfg.threads)
    g, shown = timing_graph(cfg)
    n_classes = int(g.y.max()) + 1
    train = data.split(g.y, (), cfg.train_frac, cfg.seed)[0]
    adj = normalized_adjacency(g.edge_index, g.n)
    cached = hop_features(g.x, adj, cfg.hops, cfg.beta)
    model = DeGEM(g.x.shape[1], n_classes, cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)

    def degem_step(recompute: bool):
        hops_x = hop_features(g.x, adj, cfg.hops, cfg.beta) if recompute else cached
        opt.zero_grad()
        model.loss(hops_x, g.x, adj, train, g.y)["loss"].backward()
        opt.step()

    gcn = baselines.GCN(g.x.shape[1], cfg.gcn_hidden, n_classes, cfg.dropout)
    gopt = torch.optim.Adam(gcn.parameters(), lr=cfg.gcn_lr)

    def gcn_step():
        gopt.zero_grad()
        F.cross_entropy(gcn(g.x, g.edge_index)[train], g.y[train]).backward()
        gopt.step()

    times = {
        "degem_cached": _time_epochs(lambda: degem_step(False), reps),
        "degem_recompute": _time_epochs(lambda: degem_step(True), reps),
        "gcn": _time_epochs(gcn_step, reps),
    }
    return times, shown


def _collect(per_method: dict, out: dict, gr: str, rename: dict[str, str]) -> None:
    for key, value in out.items():
        method, _, metric = key.partition("/")
        if method in rename:
            per_method.setdefault(rename[method], {}).setdefault(f"{gr}/{metric}", []).append(value)


def _run(cfg: Config, gr: str, seed: int, workdir: Path, **overrides) -> tuple[dict, dict]:
    """One run; with overrides (an ablation) only DeGEM is trained."""
    where = bench_graphs(cfg)[gr]
    run_cfg = dataclasses.replace(cfg, seed=seed, bench_graphs=(), **where, **overrides)
    out = train_and_evaluate(run_cfg, workdir, degem_only=bool(overrides))
    return out, read_json(workdir / "trace.json", "run trace")


def _ablation_seeds(cfg: Config, name: str) -> tuple[int, ...]:
    if name in EVERY_SEED_ABLATIONS:
        return cfg.seeds
    seeds = cfg.seeds[: cfg.ablation_seeds]
    return seeds[:1] if name in ONE_SEED_ABLATIONS else seeds


def _performance(cfg: Config, times: dict, graph: str) -> list[dict]:
    return [
        {
            "id": "epoch-degem-vs-gnnsafe",
            "what": f"seconds per training epoch, heterophilic graph ({graph})",
            "unit": "s",
            "higher_is_better": False,
            "ours_value": round(times["degem_cached"], 5),
            "peer": "GNNSafe's 2-layer GCN (PyG GCNConv)",
            "peer_value": round(times["gcn"], 5),
        },
        {
            "id": "epoch-cached-hops",
            "what": f"DeGEM epoch with cached hop features vs recomputing them (K={cfg.hops}, "
            f"{graph})",
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
        raise ValueError(
            "bench takes its graphs from --bench-graphs HOM HET [OTHER] (files, or cora / actor / "
            "cornell); use `degem train --graph-file` for one graph"
        )
    if cfg.bench_graphs and not 2 <= len(cfg.bench_graphs) <= 3:
        raise ValueError(f"--bench-graphs takes 2 or 3 graphs, got {len(cfg.bench_graphs)}")
    for name in cfg.bench_graphs:
        data.load_graph(graph_path(name), False)  # a bad file fails before any training
    cfg = resolve(cfg)
    graphs = bench_graphs(cfg)
    start = time.perf_counter()
    runs = Path(cfg.out)
    prefix = "" if cfg.name == "quick" else f"{cfg.name}-"
    per_method: dict[str, dict[str, list[float]]] = {m: {} for m in TABLE_METHODS}
    per_method["graph"] = {}
    traces: dict[str, dict[str, dict]] = {gr: {} for gr in ABLATION_GRAPHS}
    for gr in graphs:
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
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items() if d}
    shown = {  # figure titles: (homophily, pattern) of a generated graph, (measured h, file)
        gr: GRAPHS[gr]
        if not cfg.bench_graphs
        else (
            round(metrics["graph"][f"{gr}/edge_homophily"]["mean"], 2),
            Path(g["graph_file"]).name,
        )
        for gr, g in graphs.items()
    }
    # a real graph's epoch takes ~1 s (Actor): fewer repetitions than on the 1,000-node ones
    times, timed_on = epoch_times(cfg, reps=5 if cfg.bench_graphs else 20)
    ablated = ["DeGEM", *(ablation_name(n) for n in cfg.ablations)]
    figs = {
        f"{prefix}auroc.png": figures.plot_auroc(
            metrics,
            shown,
            [
                m
                for m in ["DeGEM", "DeGEM@test", "LatentGauss", "GNNSafe", "Energy", "Oracle"]
                if m in metrics
            ],
        ),
        f"{prefix}selection.png": figures.plot_selection(metrics, list(graphs)),
        f"{prefix}mechanism.png": figures.plot_mechanism(traces),
    }
    if cfg.ablations and ablation_seeds:
        figs[f"{prefix}ablation.png"] = figures.plot_ablation(
            metrics, ablated, list(ABLATION_GRAPHS), len(ablation_seeds)
        )
    doc = results_document(
        PAPER, cfg.name, list(cfg.seeds), metrics, compute_claims(metrics, graph_names(cfg)),
        time.perf_counter() - start, cfg.device, _performance(cfg, times, timed_on),
    )  # fmt: skip
    names = graph_names(cfg) or {}
    doc["graphs"] = {
        gr: {
            **({"name": names[gr]} if gr in names else {}),
            **{k: _portable(v) for k, v in g.items()},
        }
        for gr, g in graphs.items()
    }
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
    if "DistToReadout" in metrics:
        doc["diagnostics"]["radial"] = radial_analysis(metrics, ABLATION_GRAPHS, graphs)
    write_results(results_dir_of(cfg), cfg.name, doc, figs)
    return doc
