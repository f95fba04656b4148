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
    pos = np.arange(len(rows))
    axes[1].bar(pos - 0.2, [m("classified_share", r) for _, r in rows], 0.4, label="Algorithm 1")
    official = [m("classified_share_official", r) for _, r in rows[:4]]
    axes[1].bar(pos[:4] + 0.2, official, 0.4, label="official k")
    axes[1].axhline(0.5, color="0.5", ls="--", lw=0.8)
    axes[1].set_xticks(pos, [label for label, _ in rows], rotation=30, fontsize=7)
    axes[1].set(ylabel="share classified", title=f"Classification (t = {cfg.threshold:.1f})")
    axes[1].legend(fontsize=7)

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


def seed_curve(metrics: dict, row: str, key: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean over seeds of a per-operator curve (each seed's value its mean over the operators
    measured) and the half width of its 95% t interval (NaN below two seeds)."""
    from .results import paired_interval

    mean, half = np.full(n, np.nan), np.full(n, np.nan)
    group = metrics.get(row, {})
    for i in range(n):
        parts = [group.get(f"{key}_{i}_{op}", {}).get("values") for op in OPERATORS]
        if any(p is None for p in parts):
            continue
        grid = np.asarray(parts, dtype=float)  # [operators, seeds]
        seen = np.isfinite(grid)
        v = np.where(seen, grid, 0.0).sum(0) / np.maximum(seen.sum(0), 1)
        v = v[seen.any(0)]
        if not len(v):
            continue
        iv = paired_interval(list(v), [0.0] * len(v))
        mean[i] = iv["mean"]
        if iv["hi"] is not None:
            half[i] = iv["hi"] - iv["mean"]
    return mean, half


def plot_faithfulness(curves: dict[str, dict], cfg: Config):
    """Faithfulness against the kept share of late-layer neurons, one curve per model size
    ('LAYERSxWIDTH' -> its metrics), with 95% t intervals over seeds; the first size's random
    neurons as the floor; the claim's threshold and the paper's budget marked."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    x = np.array([100 * f for f in cfg.faith_fracs])
    n = len(x)
    for k, (label, metrics) in enumerate(curves.items()):
        mean, half = seed_curve(metrics, "BagOfHeuristics", "faith_curve", n)
        ax.errorbar(x, mean, yerr=half, fmt="o-", capsize=3, color=f"C{k}", label=f"{label} top")
        if k == 0:
            mean, half = seed_curve(metrics, "RandomNeurons", "faith_curve", n)
            ax.errorbar(
                x, mean, yerr=half, fmt="s--", capsize=3, color="0.5", label=f"{label} random"
            )
    ax.axhline(0.8, color="0.4", ls=":", lw=0.9, label="F = 0.8")
    ax.axvline(100 * cfg.paper_frac, color="C3", ls=":", lw=0.9, label="paper's budget")
    ax.axvline(100 * cfg.max_kept_frac, color="C2", ls=":", lw=0.9, label="claim's share")
    ax.set(xscale="log", xlabel="% of each late MLP layer's neurons kept", ylabel="faithfulness")
    ax.set_xlim(min(x) / 1.5, max(x) * 1.5)
    ax.set_ylim(-0.1, 1.15)
    ax.set_title(f"Faithfulness vs kept neurons ({cfg.name}; 95% t interval over seeds)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
