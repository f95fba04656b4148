"""Benchmark figures (headless): CI-test rates, power curves against n, SHD per family, the
tuning grids, returned for bench to write with its JSON (results.write_results). A preset other
than quick prefixes every name (`paper-ci_tests.png`). `graph_figure` saves discover's graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import sde
from .config import Config
from .results import save_figure
from .stats import wilson
from .train import CONTROLS, GRAPH_METHODS, GRAPH_REFERENCES, METHODS
from .tuning import TYPE1_MAX

CI_PANELS = (
    ("type1", "type-I error (null triples)"),
    ("power_drift", "power, drift edges"),
    ("power_diffusion", "power, diffusion-only edges"),
)
COLORS = dict(zip(METHODS + CONTROLS, ["C0", "C1", "C2", "C3", "C4", "0.5", "0.75"]))
COLORS["SigKer-SDCIT"] = "C5"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def ci_rates(metrics: dict, cfg: Config):
    """Bars of raw rejection rates at the largest n (and on irregular grids), mean +- std over seeds."""
    plt = _plt()
    grids = [("", f"regular grid, n={max(cfg.n_grid)}")]
    if "type1_irregular" in metrics["SigKer-CI"]:
        grids.append(("_irregular", f"irregular times, n={cfg.n_paths}"))
    fig, axes = plt.subplots(len(grids), 3, figsize=(14, 4.2 * len(grids)), squeeze=False)
    for row, (suffix, grid) in zip(axes, grids):
        for ax, (key, title) in zip(row, CI_PANELS):
            names = [m for m in METHODS + CONTROLS if key + suffix in metrics.get(m, {})]
            vals = [metrics[m][key + suffix] for m in names]
            ax.bar(
                names,
                [v["mean"] for v in vals],
                yerr=[v["std"] for v in vals],
                color=[COLORS[m] for m in names],
            )
            ax.set_title(f"{title}, {grid}")
            ax.tick_params(axis="x", rotation=45)
            if key == "type1":
                ax.axhline(cfg.alpha, color="k", ls="--", lw=1)
                ax.axhline(TYPE1_MAX, color="r", ls=":", lw=1)
            ax.set_ylim(0, 1.05)
    fig.tight_layout()
    return fig


def power_curves(summary: dict, cfg: Config):
    """Type-I error and size-adjusted power against n, pooled over seeds (Wilson 95% bars)."""
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    panels = (
        ("type1", "nulls", "type-I error (raw)"),
        ("power_drift_sa", "power_drift_count", "size-adjusted power, drift edges"),
        ("power_diffusion_sa", "power_diffusion_count", "size-adjusted power, diffusion-only"),
    )
    ns = list(cfg.n_grid)
    for ax, (key, count, title) in zip(axes, panels):
        for m in METHODS + CONTROLS:
            rows = [summary["ci"][m][str(n)] for n in ns]
            vals = np.array([r[key] for r in rows])
            bounds = np.array([wilson(round(r[key] * r[count]), r[count]) for r in rows])
            ls = "--" if m in CONTROLS else "-"
            ax.errorbar(
                ns,
                vals,
                yerr=[vals - bounds[:, 0], bounds[:, 1] - vals],
                label=m,
                color=COLORS[m],
                ls=ls,
                marker="o",
                capsize=3,
            )
        if key == "type1":
            ax.axhline(cfg.alpha, color="k", ls="--", lw=1)
            ax.axhline(TYPE1_MAX, color="r", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.set_xlabel("n (paths per data set)")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(title)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def shd_by_family(metrics: dict):
    """Mean SHD per family (seeds' mean +- std), oracle and empty-graph rows; hidden variables."""
    plt = _plt()
    names = GRAPH_METHODS + GRAPH_REFERENCES
    hidden = "shd_hidden" in metrics["SigKer-CI"]
    fig, axes = plt.subplots(1, 2 if hidden else 1, figsize=(13 if hidden else 9, 4), squeeze=False)
    ax = axes[0, 0]
    width = 0.8 / len(names)
    x = np.arange(len(sde.FAMILIES))
    for k, m in enumerate(names):
        vals = [metrics[m][f"shd_{f}"] for f in sde.FAMILIES]
        ax.bar(
            x + k * width,
            [v["mean"] for v in vals],
            width,
            yerr=[v["std"] for v in vals],
            label=m,
        )
    ax.set_xticks(x + width * (len(names) - 1) / 2, sde.FAMILIES)
    ax.set_ylabel("mean SHD (lower is better)")
    ax.set_title("random 4-5 variable DAGs, per SDE family")
    ax.legend(fontsize=8)
    if hidden:
        ax = axes[0, 1]
        cols = GRAPH_METHODS + ("empty",)
        vals = [metrics[m]["shd_hidden"] for m in cols]
        ax.bar(cols, [v["mean"] for v in vals], yerr=[v["std"] for v in vals], color="tab:green")
        ax.set_title("4-5 observed + hidden variables\n(SHD to the induced graph)")
    fig.tight_layout()
    return fig


def tuning_grids(tuned: dict):
    """Validation type-I error and KS distance over each method's grid, the chosen value ringed;
    None without tuning (tune_reps 0)."""
    plt = _plt()
    methods = [m for m, r in tuned["methods"].items() if "grid" in r]
    if not methods:
        return None
    fig, axes = plt.subplots(1, len(methods), figsize=(3.2 * len(methods), 3.4), squeeze=False)
    for ax, m in zip(axes[0], methods):
        rec = tuned["methods"][m]
        x = np.arange(len(rec["grid"]))
        ax.plot(x, rec["type1"], "o-", label="type-I")
        ax.plot(x, rec["ks"], "s-", label="KS to U(0,1)")
        c = rec["grid"].index(rec["chosen"])
        ax.plot([c], [rec["ks"][c]], "o", ms=14, mfc="none", mec="k")
        ax.axhline(TYPE1_MAX, color="r", ls=":", lw=1)
        ax.set_xticks(x, [f"{g:g}" for g in rec["grid"]], rotation=45)
        ax.set_title(f"{m}: {rec['param']}")
        ax.set_ylim(0, 1)
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def make_figures(
    metrics: dict, summary: dict, tuned: dict, cfg: Config, prefix: str = ""
) -> dict[str, object]:
    """Every benchmark figure: file name (prefixed by `prefix`) -> matplotlib figure."""
    figs = {
        f"{prefix}ci_tests.png": ci_rates(metrics, cfg),
        f"{prefix}power_vs_n.png": power_curves(summary, cfg),
        f"{prefix}shd.png": shd_by_family(metrics),
        f"{prefix}tuning.png": tuning_grids(tuned),
    }
    return {name: fig for name, fig in figs.items() if fig is not None}


def graph_figure(names: list[str], graph: np.ndarray, pmax: np.ndarray, path: Path) -> None:
    """The discovered graph (`sde-causal discover`): arrows labelled with their p-values."""
    import networkx as nx

    plt = _plt()
    g = nx.DiGraph()
    g.add_nodes_from(names)
    labels = {}
    for a, b in np.argwhere(graph):
        g.add_edge(names[a], names[b])
        labels[names[a], names[b]] = f"p={pmax[a, b]:.3g}"
    fig, ax = plt.subplots(figsize=(1.2 * len(names) + 3, 1.2 * len(names) + 2))
    pos = nx.circular_layout(g)
    nx.draw_networkx(g, pos, ax=ax, node_color="lightsteelblue", node_size=1400, arrowsize=18)
    nx.draw_networkx_edge_labels(g, pos, edge_labels=labels, ax=ax, font_size=8)
    ax.set_title("SigKer-CI discovery (edge i -> j: past of i -> future of j)")
    ax.axis("off")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
