"""The benchmark's figures (matplotlib, headless); bench writes them with its JSON
(results.write_results)."""

from __future__ import annotations

import numpy as np

SHIFTS = ("structure", "feature", "label")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(ax, metrics: dict, methods: list[str], graph: str, n_seeds: int | None = None) -> None:
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        keys = [f"{graph}/{s}_auroc" for s in SHIFTS] + [f"{graph}/avg_auroc"]
        vals = [np.asarray(metrics[m][k]["values"][:n_seeds]) for k in keys]
        ax.bar(
            np.arange(4) + i * width,
            [v.mean() for v in vals],
            width,
            yerr=[v.std() for v in vals],
            label=m,
        )
    ax.set_xticks(np.arange(4) + 0.4 - width / 2, [*SHIFTS, "average"])
    ax.set_ylim(0, 105)
    ax.axhline(50, color="grey", lw=0.8, ls="--")


def plot_auroc(metrics: dict, graphs: dict, methods: list[str]):
    """AUROC per shift and method, one panel per graph (mean and std over seeds)."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(graphs), figsize=(4.6 * len(graphs), 3.6), sharey=True)
    for ax, (gr, (h, pattern)) in zip(axes, graphs.items()):
        _bars(ax, metrics, methods, gr)
        ax.set_title(f"{gr} (h={h}, {pattern})", fontsize=9)
    axes[0].set_ylabel("AUROC (%)")
    axes[-1].legend(fontsize=6, loc="lower right")
    return fig


def plot_ablation(metrics: dict, names: list[str], graphs: list[str], n_seeds: int):
    """DeGEM's AUROC per shift for the default and every ablation, on the ablation seeds."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(graphs), figsize=(5.2 * len(graphs), 3.6), sharey=True)
    for ax, gr in zip(np.atleast_1d(axes), graphs):
        _bars(ax, metrics, names, gr, n_seeds)
        ax.set_title(f"DeGEM variants, {gr}, first {n_seeds} seed(s), last epoch", fontsize=9)
    np.atleast_1d(axes)[0].set_ylabel("AUROC (%)")
    np.atleast_1d(axes)[-1].legend(fontsize=6, loc="lower right")
    return fig


def plot_selection(metrics: dict, graphs: list[str]):
    """Average AUROC of DeGEM by model-selection rule, beside GNNSafe and the oracle."""
    plt = _plt()
    names = ["DeGEM", "DeGEM@val", "DeGEM@test", "GNNSafe", "Energy", "Oracle"]
    names = [n for n in names if n in metrics]
    fig, ax = plt.subplots(figsize=(1.6 * len(graphs) + 4, 3.4))
    width = 0.8 / len(names)
    for i, m in enumerate(names):
        vals = [np.asarray(metrics[m][f"{g}/avg_auroc"]["values"]) for g in graphs]
        label = {"DeGEM": "DeGEM (last epoch)"}.get(m, m)
        ax.bar(
            np.arange(len(graphs)) + i * width,
            [v.mean() for v in vals],
            width,
            yerr=[v.std() for v in vals],
            label=label,
        )
    ax.set_xticks(np.arange(len(graphs)) + 0.4 - width / 2, graphs)
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.set_ylim(0, 105)
    ax.set_ylabel("average AUROC over 3 shifts (%)")
    ax.set_title("DeGEM by epoch-selection rule (@test leaks test OOD labels)", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    return fig


def plot_mechanism(traces: dict):
    """Per-epoch traces of DeGEM variants (columns: graphs; rows: what is traced).

    traces: graph -> variant name -> trace dict (tracking.EpochTracker.log + auroc curves).
    """
    plt = _plt()
    rows = (
        ("auroc_structure", "AUROC of -E, structure shift (%)"),
        ("auroc_feature", "AUROC of -E, feature shift (%)"),
        ("p_ess", "readout ESS 1/sum p^2 / n"),
        ("corr_e_dist_c", "Spearman(E, |z - c|), test nodes"),
        ("gap", "E(buffer) - E(train)"),
    )
    fig, axes = plt.subplots(len(rows), len(traces), figsize=(4.8 * len(traces), 2.3 * len(rows)))
    axes = np.atleast_2d(axes.T).T if len(traces) == 1 else axes
    for col, (gr, variants) in enumerate(traces.items()):
        for row, (key, label) in enumerate(rows):
            ax = axes[row, col]
            for name, tr in variants.items():
                if key == "gap":
                    y = np.asarray(tr["e_buffer"]) - np.asarray(tr["e_train"])
                else:
                    y = np.asarray(tr[key])
                ax.plot(np.arange(1, len(y) + 1), y, lw=1, label=name)
            if key.startswith("auroc"):
                ax.axhline(50, color="grey", lw=0.8, ls="--")
                ax.set_ylim(0, 100)
            if key in ("gap", "corr_e_dist_c"):
                ax.axhline(0, color="grey", lw=0.8, ls="--")
            ax.set_ylabel(label, fontsize=7)
            if row == 0:
                ax.set_title(f"{gr}, seed 0, after every epoch", fontsize=9)
        axes[-1, col].set_xlabel("epoch")
    axes[0, -1].legend(fontsize=6)
    return fig
