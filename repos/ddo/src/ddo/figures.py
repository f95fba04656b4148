"""The benchmark's figures (PNG, headless): samples of both problems, DA curves, mode TV, tuning.

Quick figures keep their plain names; other presets prefix theirs ("paper-samples.png"). They are
returned as PNG bytes by file name; the bench writes them beside its JSON (results.write_results).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from .config import Config
from .experiments import HARD, optimum
from .results import figure_png
from .train import METHODS

HARD_METHODS = ("DDO (exact score)", "ULA", "MALA", "ULA from its target", "Reference")


def _mean(metrics: dict, method: str, key: str) -> float:
    return metrics[method][key]["mean"]


def _scatter_panels(grid, q, samples, names, title_prefix) -> bytes:
    """One panel per sampler: its first 1000 points in red over q (grey) on the grid."""
    panels = ("q_hat (grid optimum)",) + tuple(names)
    cols = 3 if len(panels) <= 6 else 5
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 3 * rows), sharex=True, sharey=True)
    xy = grid.x.numpy()
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for ax, name in zip(axes.flat, panels):
        ax.scatter(xy[:, 0], xy[:, 1], c=q.numpy(), s=4, cmap="Greys", marker="s")
        key = title_prefix + name
        if key in samples.files:
            pts = samples[key][:1000]
            ax.scatter(pts[:, 0], pts[:, 1], s=2, alpha=0.5, color="tab:red")
        ax.set_title(name, fontsize=9)
        ax.set_aspect("equal")
    return figure_png(fig)


def figures(cfg: Config, metrics: dict, tuning: dict, prefix: str = "") -> dict[str, bytes]:
    """File name -> PNG of every figure (samples from the first seed's run in cfg.out)."""
    run = Path(cfg.out) / f"seed{cfg.seeds[0]}"
    out: dict[str, bytes] = {}
    grid, q_hat = optimum(cfg)
    out[f"{prefix}samples.png"] = _scatter_panels(
        grid, q_hat, np.load(run / "samples.npz"), METHODS, ""
    )
    grid_h, q_hat_h = optimum(cfg, hard=True)
    out[f"{prefix}hard_samples.png"] = _scatter_panels(
        grid_h, q_hat_h, np.load(run / "samples_hard.npz"), HARD_METHODS, HARD
    )

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.5))
    ks = np.arange(cfg.da_loops + 1)
    for key, label in (
        ("objective_loop", "L(q_k), network DA"),
        ("heldout_dpo_loop", "held-out DPO loss"),
    ):
        mean = np.array([_mean(metrics, METHODS[0], f"{key}{k}") for k in ks])
        std = np.array([metrics[METHODS[0]][f"{key}{k}"]["std"] for k in ks])
        ax.errorbar(ks, mean, yerr=std, marker="o", label=label, capsize=3)
    ax.axhline(_mean(metrics, "q_hat", "objective"), color="k", ls="--", label="L(q_hat)")
    ax.set_xlabel("dual-averaging loop k")
    ax.legend(fontsize=8)
    kg = np.arange(cfg.grid_da_loops + 1)
    for name in ("Grid DA (linear c_k)", "Grid DA (constant c_k)", "Grid DA (flipped preferences)"):
        curve = [_mean(metrics, name, f"objective_loop{k}") for k in kg]
        ax2.plot(kg, curve, marker=".", label=name)
    ax2.axhline(_mean(metrics, "q_hat", "objective"), color="k", ls="--", label="L(q_hat)")
    ax2.set_xlabel("loop k (exact DA on the grid)")
    ax2.set_ylabel("L(q_k)")
    ax2.legend(fontsize=8)
    out[f"{prefix}da_objective.png"] = figure_png(fig)

    fig, ax = plt.subplots(figsize=(9, 3.5))
    names = list(METHODS) + [HARD + m for m in HARD_METHODS]
    ax.bar(range(len(names)), [_mean(metrics, n, "tv_to_target") for n in names],
           yerr=[metrics[n]["tv_to_target"]["std"] for n in names], color="tab:blue")  # fmt: skip
    ax.axhline(0.05, color="g", ls="--", label="TV 0.05")
    ax.axhline(0.3, color="r", ls=":", label="TV 0.3")
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=7)
    ax.set_ylabel("TV of mode weights to DA's target")
    ax.legend()
    out[f"{prefix}mode_tv.png"] = figure_png(fig)

    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    for ax, key in zip(axes, ("DDO fit_lr", "Diffusion-DPO ddpo_beta")):
        ax.semilogx(tuning[key]["grid"], tuning[key]["validation_objective"], marker="o")
        ax.set_xlabel(key)
        ax.set_ylabel("validation L(q)")
    out[f"{prefix}tuning.png"] = figure_png(fig)

    images = run / "images.npz"
    if cfg.images and images.exists():
        out[f"{prefix}images.png"] = image_figure(np.load(images))
    return out


def image_figure(samples, per_row: int = 8) -> bytes:
    """The first `per_row` images of every sampler of the image experiment, one row each."""
    fig, axes = plt.subplots(len(samples.files), 1, figsize=(per_row, 1.2 * len(samples.files)))
    for ax, name in zip(np.atleast_1d(axes), samples.files):
        x = (samples[name][:per_row].clip(-1, 1) + 1) / 2  # (n, 3, H, W) in [0, 1]
        ax.imshow(np.concatenate(list(x.transpose(0, 2, 3, 1)), axis=1))
        ax.set_title(name, fontsize=9)
        ax.axis("off")
    return figure_png(fig)
