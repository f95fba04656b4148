"""Quick benchmark: every method over the preset's seeds, claims computed from the metrics."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import itertools

import matplotlib.pyplot as plt
import numpy as np

from .config import Config
from .results import atomic_write_json, claim, results_document, save_figure, summarize
from .train import METHODS, optimum, train_and_evaluate

PAPER = "ddo"
DDO, DDO_LEARNED = "DDO (exact score)", "DDO (learned score)"
TV_MATCH = 0.05  # h-transform sampler vs q_hat mode weights (the gate)
TV_ULA = 0.3  # short-run ULA is said to misweight modes when its TV exceeds this
LOOP_TOL = 0.01  # an increase of L(q_k) smaller than this counts as Monte-Carlo noise


def _mean(metrics: dict, method: str, key: str) -> float:
    return metrics[method][key]["mean"]


def compute_claims(metrics: dict, loops: int) -> list[dict]:
    """The issue's four claims, each decided by a threshold on measured metrics."""
    tv = _mean(metrics, DDO, "tv_modes")
    ddo_l, ddo_exact_l = _mean(metrics, DDO_LEARNED, "objective"), _mean(metrics, DDO, "objective")
    dpo_l, ula_tv = _mean(metrics, "Diffusion-DPO", "objective"), _mean(metrics, "ULA", "tv_modes")
    ref_tv, ula_moved = _mean(metrics, "Reference", "tv_modes"), _mean(metrics, "ULA", "mass_moved")
    curve = [_mean(metrics, DDO, f"objective_loop{k}") for k in range(loops + 1)]
    falls = curve[-1] < curve[0] and all(b <= a + LOOP_TOL for a, b in itertools.pairwise(curve))
    no_numbers = "no numbers reported (qualitative figures only)"
    return [
        claim(
            "h-transform-matches-q-hat",
            f"the h-transform sampler matches q_hat's mode weights within TV {TV_MATCH}",
            f"TV bound without isoperimetry (Thm. on end-to-end sampling error); {no_numbers}",
            f"TV {tv:.3f} (exact reference score, {loops} DA loops)",
            tv < TV_MATCH,
        ),
        claim(
            "ddo-beats-diffusion-dpo",
            "DDO reaches a lower L(q) than Diffusion-DPO at equal compute (same learned score)",
            f"DDO improves the true objective over diffusion baselines; {no_numbers}",
            f"L {ddo_l:.4f} (DDO, learned score; exact score {ddo_exact_l:.4f}) "
            f"vs {dpo_l:.4f} (Diffusion-DPO)",
            ddo_l < dpo_l,
        ),
        claim(
            "short-run-ula-misweights",
            f"short-run ULA on log p_ref - f misweights the modes (TV > {TV_ULA})",
            "Langevin-based DA needs isoperimetry; DDO's sampler does not",
            f"ULA TV {ula_tv:.3f} vs DDO TV {tv:.3f}; ULA moved {ula_moved:.3f} of the mass "
            f"between modes, and its start p_ref is itself only TV {ref_tv:.3f} from q_hat",
            ula_tv > TV_ULA,
        ),
        claim(
            "objective-falls-over-da-loops",
            f"L(q_k) falls over the DA loops (no rise above {LOOP_TOL})",
            f"the DPO loss falls over DA loops k = 1, 2, 3 (figure); {no_numbers}",
            " -> ".join(f"{v:.4f}" for v in curve),
            falls,
        ),
    ]


def performance(metrics: dict) -> list[dict]:
    ours = _mean(metrics, DDO, "seconds_per_sample")
    peer = _mean(metrics, "Importance resampling", "seconds_per_effective_sample")
    ess = _mean(metrics, "Importance resampling", "ess")
    return [
        {
            "id": "seconds-per-aligned-sample",
            "what": "wall time per independent aligned sample (IR: per effective sample)",
            "ours_s": ours, "peer": "self-normalised importance resampling", "peer_s": peer,
            "ratio": ours / peer,
        },
        {
            "id": "effective-sample-size",
            "what": "effective sample size: h-transform draws are independent (ESS = n); "
            "IR's ESS of its reference pool",
            "ours_ess": _mean(metrics, DDO, "n_samples"), "peer": "importance resampling",
            "peer_ess": ess, "peer_pool": _mean(metrics, "Importance resampling", "pool"),
        },
    ]  # fmt: skip


def figures(cfg: Config, metrics: dict, figdir: Path) -> None:
    """Samples of every method (seed 0) over q_hat, L(q_k) per DA loop, mode weights."""
    grid, q_hat = optimum(cfg)
    samples = np.load(Path(cfg.out) / f"seed{cfg.seeds[0]}" / "samples.npz")
    fig, axes = plt.subplots(2, 4, figsize=(14, 7), sharex=True, sharey=True)
    xy = grid.x.numpy()
    for ax, name in zip(axes.flat, ("q_hat (grid optimum)",) + METHODS):
        ax.scatter(xy[:, 0], xy[:, 1], c=q_hat.numpy(), s=4, cmap="Greys", marker="s")
        if name in samples.files:
            pts = samples[name][:1000]
            ax.scatter(pts[:, 0], pts[:, 1], s=2, alpha=0.5, color="tab:red")
        ax.set_title(name, fontsize=9)
        ax.set_aspect("equal")
    save_figure(fig, figdir / "samples.png")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ks = np.arange(cfg.da_loops + 1)
    for key, label in (
        ("objective_loop", "L(q_k), grid"),
        ("heldout_dpo_loop", "held-out DPO loss"),
    ):
        mean = np.array([_mean(metrics, DDO, f"{key}{k}") for k in ks])
        std = np.array([metrics[DDO][f"{key}{k}"]["std"] for k in ks])
        ax.errorbar(ks, mean, yerr=std, marker="o", label=label, capsize=3)
    ax.axhline(_mean(metrics, "q_hat", "objective"), color="k", ls="--", label="L(q_hat)")
    ax.set_xlabel("dual-averaging loop k")
    ax.legend()
    save_figure(fig, figdir / "da_objective.png")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = METHODS
    ax.bar(range(len(names)), [_mean(metrics, n, "tv_modes") for n in names], color="tab:blue")
    ax.axhline(TV_MATCH, color="g", ls="--", label=f"TV {TV_MATCH}")
    ax.axhline(TV_ULA, color="r", ls=":", label=f"TV {TV_ULA}")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("TV of mode weights to q_hat")
    ax.legend()
    save_figure(fig, figdir / "mode_tv.png")
    plt.close(fig)
    images = Path(cfg.out) / f"seed{cfg.seeds[0]}" / "images.npz"
    if cfg.images and images.exists():
        image_figure(np.load(images), figdir / "images.png")


def image_figure(samples, path: Path, per_row: int = 8) -> None:
    """The first `per_row` images of every sampler of the image experiment, one row each."""
    fig, axes = plt.subplots(len(samples.files), 1, figsize=(per_row, 1.2 * len(samples.files)))
    for ax, name in zip(np.atleast_1d(axes), samples.files):
        x = (samples[name][:per_row].clip(-1, 1) + 1) / 2  # (n, 3, H, W) in [0, 1]
        ax.imshow(np.concatenate(list(x.transpose(0, 2, 3, 1)), axis=1))
        ax.set_title(name, fontsize=9)
        ax.axis("off")
    save_figure(fig, path)
    plt.close(fig)


def run_bench(cfg: Config) -> dict:
    start = time.perf_counter()
    per_method: dict[str, dict[str, list[float]]] = {}
    for seed in cfg.seeds:
        run_cfg = dataclasses.replace(cfg, seed=seed)
        for key, value in train_and_evaluate(run_cfg, Path(cfg.out) / f"seed{seed}").items():
            method, metric = key.split("/", 1)
            per_method.setdefault(method, {}).setdefault(metric, []).append(value)
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    claims = compute_claims(metrics, cfg.da_loops)
    figures(cfg, metrics, Path(cfg.results_dir) / "figures")
    doc = results_document(
        PAPER, cfg.name, list(cfg.seeds), metrics, claims, time.perf_counter() - start,
        cfg.device, performance(metrics),
    )  # fmt: skip
    atomic_write_json(Path(cfg.results_dir) / f"{cfg.name}.json", doc)
    return doc
