"""Benchmark figures (matplotlib, headless); bench.py writes them beside the results JSON."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from .claims import FLOOR, ORACLE, OURS


def plot_worst(problems: tuple[str, ...], metrics: dict) -> plt.Figure:
    """Mean worst case per method (bars) with every seed's value (dots), log scale."""
    fig, axes = plt.subplots(1, len(problems), figsize=(4.4 * len(problems), 3.8), squeeze=False)
    for ax, prob in zip(axes[0], problems):
        labels = [lab for lab in metrics if f"{prob}/worst" in metrics[lab]]
        entries = [metrics[lab][f"{prob}/worst"] for lab in labels]
        colours = [
            "C3" if lab == OURS else "0.6" if lab in (FLOOR, ORACLE) else "C0" for lab in labels
        ]
        ax.bar(range(len(labels)), [e["mean"] for e in entries], color=colours, alpha=0.8)
        for i, e in enumerate(entries):
            ax.plot([i] * len(e["values"]), e["values"], "k.", ms=3)
        ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_yscale("log")
        ax.set_title(f"{prob}: worst case max_i min_k f_i", fontsize=9)
    return fig


def plot_curves(curves: dict) -> plt.Figure:
    """Worst case of the averaged weights during training, mean over seeds."""
    fig, axes = plt.subplots(1, max(1, len(curves)), figsize=(4.4 * max(1, len(curves)), 3.4))
    for ax, (tag, by_method) in zip(np.atleast_1d(axes), curves.items()):
        for label, history in by_method.items():
            steps = [s for s, _ in history]
            worst = [float(np.mean(w)) for _, w in history]
            ax.plot(steps, worst, label=label, lw=2.5 if label == OURS else 1.2)
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_title(f"{tag}: worst case (mean over seeds)", fontsize=9)
        ax.legend(fontsize=6)
    return fig


def plot_growth(growth: dict) -> plt.Figure:
    """Seconds per training step against m and K: ours against the port of the official step."""
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4))
    for ax, (axis, rows) in zip(axes, growth.items()):
        if rows:
            sizes_, ours, ref = zip(*rows)
            ax.loglog(sizes_, ours, "o-", label="ours (cached data)")
            ax.loglog(sizes_, ref, "s--", label="official step (port)")
        ax.set_xlabel(axis)
        ax.set_ylabel("seconds per step (quadratic)")
    axes[0].legend(fontsize=7)
    return fig


def plot_k_sweep(sweeps: dict[str, list[tuple[int, int]]], metrics: dict) -> plt.Figure:
    """Worst case against K for every method of the sweep (mean over seeds, the band spanning the
    seeds' minimum and maximum), one panel per (problem, m), log scale."""
    panels = sorted({(p, m) for p, points in sweeps.items() for _, m in points})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.6), squeeze=False)
    for ax, (prob, m) in zip(axes[0], panels):
        ks = sorted(k for p, points in sweeps.items() if p == prob for k, mm in points if mm == m)
        keys = [f"{prob}-K{k}-m{m}/worst" for k in ks]
        labels = [
            lab for lab in metrics if lab != ORACLE and all(key in metrics[lab] for key in keys)
        ]
        for i, lab in enumerate(labels):
            vals = np.array([metrics[lab][key]["values"] for key in keys])
            others = [c for c in (f"C{j}" for j in range(10)) if c != "C3"]  # C3: STCH-Set
            style = {"color": "C3", "lw": 2} if lab == OURS else {"color": others[i % 9], "lw": 1}
            if lab == FLOOR:
                style = {"color": "0.6", "ls": "--", "lw": 1}
            ax.plot(ks, vals.mean(axis=1), marker="o", ms=3, label=lab, **style)
            ax.fill_between(
                ks, vals.min(axis=1), vals.max(axis=1), alpha=0.12, color=style["color"]
            )
        ax.set_xlabel("K (solutions)")
        ax.set_xticks(ks)
        ax.set_yscale("log")
        ax.set_title(f"{prob}, m={m}: worst case max_i min_k f_i", fontsize=9)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig
