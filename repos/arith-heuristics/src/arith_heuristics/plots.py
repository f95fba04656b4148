"""The benchmark figure: faithfulness, classification, prompt knockout, checkpoint overlap,
each with its nulls (means over seeds and operators)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from .config import OPERATORS, Config


def plot(metrics: dict, cfg: Config):
    """The figure (bench writes it beside the results JSON)."""

    def m(key: str, row: str = "BagOfHeuristics") -> float:
        group = metrics.get(row, {})
        if key in group:
            return group[key]["mean"]
        # rows kept per operator only (the independent models): the mean over operators
        per_op = [group[f"{key}_{op}"]["mean"] for op in OPERATORS if f"{key}_{op}" in group]
        return float(np.mean(per_op)) if per_op else float("nan")

    fig, axes = plt.subplots(1, 4, figsize=(17, 3.6))
    x = [100 * f for f in cfg.faith_fracs]
    n = len(cfg.faith_fracs)
    ax = axes[0]
    ax.plot(x, [m(f"faith_curve_{i}") for i in range(n)], "o-", label="top neurons")
    ax.plot(x, [m(f"faith_curve_all_heads_{i}") for i in range(n)], "^:", label="top, all heads")
    ax.plot(x, [m(f"faith_curve_{i}", "RandomNeurons") for i in range(n)], "s--", label="random")
    ax.axhline(0.8, color="0.5", ls="--", lw=0.8)
    ax.set(xscale="log", xlabel="% late-layer neurons kept", ylabel="faithfulness (Eq. 2)")
    ax.set_xlim(min(x) / 1.5, max(x) * 1.5)  # explicit: an all-NaN curve has no data limits
    ax.set_ylim(-0.1, 1.1)
    ax.set_title("Faithfulness")
    ax.legend(fontsize=7)

    rows = [
        ("top", "BagOfHeuristics"),
        ("bottom", "BottomNeurons"),
        ("untrained top", "UntrainedModel"),
        ("untrained bottom", "UntrainedBottomNeurons"),
        ("random maps", "RandomMaps"),
    ]
    axes[1].bar(range(len(rows)), [m("classified_share", r) for _, r in rows], color="C0")
    axes[1].set_xticks(range(len(rows)), [label for label, _ in rows], rotation=30, fontsize=7)
    axes[1].set(ylabel="share classified", title=f"Algorithm 1 (t = {cfg.threshold:.1f})")

    counts = list(cfg.knockout_counts)
    for row, style, label in (
        ("BagOfHeuristics", "o-", "own heuristics"),
        ("RandomHeuristicNeurons", "s--", "random heuristic neurons"),
        ("RandomAnyNeurons", "x:", "random neurons"),
        ("ShuffledPrompts", "d-.", "another prompt's"),
    ):
        axes[2].plot(
            counts, [m(f"guided_acc_{i}", row) for i in range(len(counts))], style, label=label
        )
    axes[2].set(xlabel="neurons ablated per layer", ylabel="accuracy", title="Prompt knockout")
    axes[2].legend(fontsize=7)

    own = sorted(
        (
            k
            for k in metrics["BagOfHeuristics"]
            if k.startswith("overlap_ckpt_") and k.count("_") == 2
        ),
        key=lambda k: int(k.rsplit("_", 1)[1]),
    )
    steps = np.arange(1, len(own) + 1)
    axes[3].plot(steps, [m(k) for k in own], "o-", label="same run")
    axes[3].plot(steps, [m(k, "IndependentModel") for k in own], "s--", label="independent model")
    axes[3].set(xlabel="checkpoint", ylabel="overlap with final", title="Heuristics over training")
    axes[3].legend(fontsize=7)
    fig.tight_layout()
    return fig
