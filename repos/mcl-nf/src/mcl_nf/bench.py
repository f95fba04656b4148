"""Quick benchmark: every method over the preset's seeds, claims computed from the metrics,
speed figures (vmapped modules and per-sample Fisher against Python loops), and a figure."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from . import data
from .config import Config
from .modular import (
    fisher_trace,
    fisher_trace_fast,
    fisher_trace_loop,
    init_params,
    maml_outer_loss,
)
from .results import atomic_write_json, claim, results_document, save_figure, summarize
from .train import CONTINUAL, METHODS, signals, split_targets, train_and_evaluate

PAPER = "mcl-nf"
STEP1_MARGIN_DB = 3.0
MOL_MARGIN_DB = 1.0
FORGET_NAIVE_DB = 1.0


def timed(fn, repeats: int = 3) -> float:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return min(out)


def performance(cfg: Config) -> list[dict]:
    """Meta-training step: all B * t modules in one vmap vs a Python loop over modules.
    Per-sample Fisher trace: vmap(grad) vs one autograd call per sample, and the per-layer closed
    form (what the FIM loss uses) vs vmap(grad). Image preset sizes."""
    cfg = dataclasses.replace(cfg, signal="image")
    torch.set_num_threads(cfg.threads)
    module, theta0 = init_params(cfg.hidden, cfg.omega0, cfg.seed, cfg.device)
    theta0 = {k: v.requires_grad_() for k, v in theta0.items()}
    coords, index = data.partition(cfg.image_size, cfg.grid)
    batch = split_targets(signals(cfg, "train", cfg.meta_batch), index)
    x = coords.repeat(cfg.meta_batch, 1, 1)
    y = batch.reshape(x.shape[0], -1, 3)
    args = (cfg.inner_steps, cfg.inner_lr, cfg.first_order)

    def vmapped() -> None:
        maml_outer_loss(module, theta0, x, y, *args).backward()

    def looped() -> None:
        sum(
            maml_outer_loss(module, theta0, x[i : i + 1], y[i : i + 1], *args)
            for i in range(len(x))
        ).backward()

    params = {k: v.detach().unsqueeze(0) for k, v in theta0.items()}
    fx, fy = x[:1, :64], y[:1, :64]
    px = {k: v.expand(len(x), *v.shape[1:]) for k, v in params.items()}
    perf = []
    for pid, what, fast, slow, peer in (
        (
            "meta-step",
            f"one MAML meta-step, {len(x)} modules x {x.shape[1]} points",
            vmapped,
            looped,
            "Python loop over modules",
        ),
        (
            "fisher-trace",
            "per-sample Fisher trace, 64 samples",
            lambda: fisher_trace(module, params, fx, fy, cfg.sigma),
            lambda: fisher_trace_loop(module, params, fx, fy, cfg.sigma),
            "one autograd call per sample",
        ),
        (
            "fisher-trace-layerwise",
            f"per-sample Fisher trace, {len(x)} modules x {x.shape[1]} points, closed form per layer",
            lambda: fisher_trace_fast(module, px, x, y, cfg.sigma),
            lambda: fisher_trace(module, px, x, y, cfg.sigma),
            "vmap(grad) per-sample gradients",
        ),
    ):
        ours, theirs = timed(fast), timed(slow)
        perf.append(
            {
                "id": pid,
                "what": what,
                "ours_s": ours,
                "peer": peer,
                "peer_s": theirs,
                "ratio": ours / theirs,
            }
        )
    return perf


def prefix(signal: str) -> str:
    """Metric-name prefix of a signal family in results JSON: none for images, 'audio_' ..."""
    return "" if signal == "image" else f"{signal}_"


def compute_claims(metrics: dict, last: int, signal: str = "image") -> list[dict]:
    """The issue's three gated claims for one signal family (metric names prefixed for audio)."""
    pre = prefix(signal)
    cid, what = ("", "") if signal == "image" else (f"{signal}-", f"{signal}: ")

    def mean(method: str, key: str) -> float:
        return metrics[method][pre + key]["mean"]

    ours1 = mean("MCL-NF", "psnr_step1")
    best_cl = max(CONTINUAL, key=lambda m: mean(m, "psnr_step1"))
    ours_last, mol_last = mean("MCL-NF", f"psnr_step{last}"), mean("MOL", f"psnr_step{last}")
    forget_ours = max(abs(v) for v in metrics["MCL-NF"][pre + "forgetting_q1_db"]["values"])
    forget_naive = mean("Naive", "forgetting_q1_db")
    return [
        claim(
            f"{cid}step1-beats-best-cl",
            f"{what}whole-signal PSNR at test step 1: MCL-NF >= best continual-learning baseline + {STEP1_MARGIN_DB} dB",
            "best PSNR at step 1 among OL/CL/CML/MOL/MCL methods on all six datasets (Table 1)",
            f"{ours1:.2f} dB vs {best_cl} {mean(best_cl, 'psnr_step1'):.2f} dB",
            ours1 >= mean(best_cl, "psnr_step1") + STEP1_MARGIN_DB,
        ),
        claim(
            f"{cid}step{last}-beats-mol",
            f"{what}whole-signal PSNR at test step {last}: MCL-NF >= MOL + {MOL_MARGIN_DB} dB",
            "MOL (meta-learned init, sequential fitting) forgets earlier sub-tasks; MCL-NF best at the end",
            f"{ours_last:.2f} dB vs MOL {mol_last:.2f} dB",
            ours_last >= mol_last + MOL_MARGIN_DB,
        ),
        claim(
            f"{cid}no-forgetting",
            f"{what}sub-task 1's PSNR drop after the last sub-task: 0 for MCL-NF, > {FORGET_NAIVE_DB} dB for naive fine-tuning",
            "modules make MCL-NF free of catastrophic forgetting",
            f"MCL-NF max |drop| {forget_ours:.2g} dB vs naive {forget_naive:.2f} dB",
            forget_ours == 0.0 and forget_naive > FORGET_NAIVE_DB,
        ),
    ]


def plot(metrics: dict, steps: tuple[int, ...], signals: tuple[str, ...], path: Path) -> None:
    fig, axes = plt.subplots(len(signals), 2, figsize=(10, 3.8 * len(signals)), squeeze=False)
    for (ax1, ax2), signal in zip(axes, signals):
        pre = prefix(signal)
        for method in METHODS:
            means = [metrics[method][f"{pre}psnr_step{s}"]["mean"] for s in steps]
            stds = [metrics[method][f"{pre}psnr_step{s}"]["std"] for s in steps]
            ax1.errorbar(steps, means, yerr=stds, marker="o", capsize=3, label=method)
        ax1.set(
            xscale="log",
            xlabel="test-time SGD steps per sub-task",
            ylabel="whole-signal PSNR (dB)",
            title=signal,
        )
        ax1.legend(fontsize=7)
        forgetting = [m for m in METHODS if f"{pre}forgetting_q1_db" in metrics[m]]
        ax2.bar(forgetting, [metrics[m][f"{pre}forgetting_q1_db"]["mean"] for m in forgetting])
        ax2.set(ylabel="PSNR drop of sub-task 1 (dB)", title=f"{signal}: forgetting")
        ax2.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def run_bench(cfg: Config) -> dict:
    """Every method on every signal family in cfg.bench_signals over cfg.seeds."""
    start = time.perf_counter()
    per_method: dict[str, dict[str, list[float]]] = {m: {} for m in METHODS}
    for signal in cfg.bench_signals:
        for seed in cfg.seeds:
            flat = train_and_evaluate(
                dataclasses.replace(cfg, seed=seed, signal=signal),
                Path(cfg.out) / signal / f"seed{seed}",
            )
            for key, value in flat.items():
                method, metric = key.split("/")
                per_method[method].setdefault(prefix(signal) + metric, []).append(value)
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    last = max(cfg.eval_steps)
    plot(
        metrics,
        tuple(sorted(cfg.eval_steps)),
        cfg.bench_signals,
        Path(cfg.results_dir) / "figures" / "psnr_and_forgetting.png",
    )
    claims = [c for signal in cfg.bench_signals for c in compute_claims(metrics, last, signal)]
    perf = performance(cfg)
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
    atomic_write_json(Path(cfg.results_dir) / f"{cfg.name}.json", doc)
    return doc
