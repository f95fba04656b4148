"""Benchmark: every method tuned on the same lr x scale grid, then run over the preset's seeds at
each parameter budget; claims computed from the paired per-seed results; the structure task and
the performance figures reported beside them. Writes <results-dir>/<preset>.json and figures/
(results_dir_of: runs/<preset> unless --results-dir is given); the per-run folders under --out
keep config.json and metrics.json, not weights (`flora train` saves those)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from .baselines import ADAPTERS, BUDGET_TOL
from .claims import SHUFFLED, transfer_claims
from .config import METHODS, STRUCTURE_METHODS, Config, validate
from .models import LINEAR_ONLY
from .results import figure_png, results_document, summarize, write_results
from .runtime import resolve_device, results_dir_of
from .train import train_and_evaluate

PAPER = "flora"
NAMES = {"flora": "FLoRA", "flora_flat": "FLoRA-flat", "lora": "LoRA", "dora": "DoRA",
         "locon_tucker": "LoCon-Tucker", "loha": "LoHa", "lokr": "LoKr", "full": "Full FT",
         "linear_probe": "Linear probe", "bitfit": "BitFit"}  # fmt: skip
TASKS = ("shift", "rotated")
BUDGET_RULE = (
    "per-layer ranks (FLoRA, FLoRA-flat: channel ranks); start: one rank for the model whose "
    "trainable count is nearest to LoRA's at the budget's rank, ties to the smaller (FLoRA: each "
    "layer's nearest to LoRA's count on that layer); then the fewest layers moved by one rank "
    "that bring the count within `tolerance` of LoRA's, or the nearest count one-rank moves "
    "reach; `rank` is the mean over the adapted layers; LoKr's count stops growing at rank 4"
)


def methods_for(backbone: str) -> tuple[str, ...]:
    """On 2-D weights FLoRA-flat is FLoRA and LoCon-Tucker is LoRA: those run on convs only."""
    same = ("flora_flat", "locon_tucker") if backbone in LINEAR_ONLY else ()
    return tuple(m for m in METHODS if m not in same)


def grid(method: str, cfg: Config) -> list[tuple[float, float]]:
    scales = cfg.scale_grid if method in ADAPTERS else (1.0,)
    return [(lr, s) for lr in cfg.lr_grid for s in scales]


def transfer_run(cfg: Config, backbone: str, method: str, rank: int, seed: int, lr: float,
                 scale: float, shuffle: bool = False) -> dict[str, float]:  # fmt: skip
    run = dataclasses.replace(cfg, task="transfer", backbones=(backbone,), method=method,
                              lora_rank=rank, seed=seed, lr=lr, scale=scale, shuffle_labels=shuffle)  # fmt: skip
    tag = "shuffled" if shuffle else method
    workdir = (
        Path(cfg.out) / "transfer" / backbone / f"r{rank}" / tag / f"seed{seed}-lr{lr}-s{scale}"
    )
    m = train_and_evaluate(run, workdir, save_weights=False)
    tasks = ("folder",) if cfg.data_dir else TASKS
    for split in ("", "val_"):
        m[f"{backbone}_mean_{split}acc"] = float(
            np.mean([m[f"{backbone}_{t}_{split}acc"] for t in tasks])
        )
    return m


def tune(cfg: Config, backbone: str, method: str, rank: int) -> tuple[dict, dict]:
    """Grid search on the first seed's validation split; returns (record, the chosen run's metrics)."""
    seed, trials = cfg.seeds[0], []
    for lr, s in grid(method, cfg):
        m = transfer_run(cfg, backbone, method, rank, seed, lr, s)
        trials.append(((lr, s), m))
    (lr, s), best = max(trials, key=lambda t: t[1][f"{backbone}_mean_val_acc"])
    record = {"lr": lr, "scale": s,
              "grid": [[*c, m[f"{backbone}_mean_val_acc"]] for c, m in trials]}  # fmt: skip
    return record, best


def run_cell(cfg: Config, backbone: str, rank: int, tuned: dict) -> tuple[dict, dict]:
    """Every method at one budget over the seeds: ({name: per-seed metrics}, the configs used).
    Methods missing from `tuned` are tuned here first (their grid's first-seed run is reused)."""
    cell, chosen = {}, {}
    for method in methods_for(backbone):
        first = None
        if method in tuned:
            record = tuned[method]
        else:
            record, first = tune(cfg, backbone, method, rank)
        chosen[method] = record
        rest = cfg.seeds[1:] if first else cfg.seeds
        runs = [transfer_run(cfg, backbone, method, rank, seed, record["lr"], record["scale"])
                for seed in rest]  # fmt: skip
        cell[NAMES[method]] = [first, *runs] if first else runs
    fl = chosen["flora"]
    cell[SHUFFLED] = [transfer_run(cfg, backbone, "flora", rank, seed, fl["lr"], fl["scale"],
                                   shuffle=True) for seed in cfg.seeds]  # fmt: skip
    return cell, chosen


def budget_row(cell: dict, backbone: str) -> dict:
    """Each method's rank (mean over its adapted layers) and trainable count at one budget, and
    its ratio to LoRA's count."""
    lora = cell[NAMES["lora"]][0][f"{backbone}_trainable"]
    return {
        name: {
            "rank": round(runs[0][f"{backbone}_rank"], 2),
            "trainable": int(runs[0][f"{backbone}_trainable"]),
            "ratio_to_lora": round(runs[0][f"{backbone}_trainable"] / lora, 4),
        }
        for name, runs in cell.items()
    }


def run_transfer_bench(cfg: Config) -> tuple[dict, dict, dict, dict]:
    """(per-seed mean test accuracy [backbone][rank][name], metric lists [name][key], tuning,
    budget rows [backbone][r<rank>][name])."""
    results: dict = {}
    per_method: dict[str, dict[str, list[float]]] = {}
    tuning: dict = {}
    budget: dict = {}
    for backbone in cfg.backbones:
        ranks = sorted(cfg.budget_ranks, key=lambda r: r != cfg.tune_rank)  # the tuned one first
        tuned: dict = {}
        for rank in ranks:
            cell, chosen = run_cell(cfg, backbone, rank, tuned)
            if cfg.tune_rank:
                tuned = chosen
            tuning.setdefault(backbone, {})[f"r{rank}"] = chosen
            budget.setdefault(backbone, {})[f"r{rank}"] = budget_row(cell, backbone)
            results.setdefault(backbone, {})[rank] = {
                name: [m[f"{backbone}_mean_acc"] for m in runs] for name, runs in cell.items()
            }
            for name, runs in cell.items():
                for m in runs:
                    for k, v in m.items():
                        key = f"{backbone}_r{rank}_{k.removeprefix(backbone + '_')}"
                        per_method.setdefault(name, {}).setdefault(key, []).append(v)
        results[backbone] = dict(sorted(results[backbone].items()))
        budget[backbone] = dict(sorted(budget[backbone].items(), key=lambda kv: int(kv[0][1:])))
    return results, per_method, tuning, budget


def run_structure_bench(cfg: Config, per_method: dict) -> None:
    """Reported only (its outcome is fixed by parameter arithmetic, so it is a test, not a claim)."""
    run = dataclasses.replace(cfg, task="structure", seed=cfg.seeds[0])
    for method in STRUCTURE_METHODS:
        workdir = Path(cfg.out) / "structure" / method
        metrics = train_and_evaluate(
            dataclasses.replace(run, method=method), workdir, save_weights=False
        )
        for k, v in metrics.items():
            per_method.setdefault(NAMES[method], {})[f"structure_{k}"] = [v]


def run_bench(cfg: Config) -> dict:
    validate(cfg)
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    torch.set_num_threads(cfg.threads)
    start = time.perf_counter()
    results, per_method, tuning, budget = run_transfer_bench(cfg)
    run_structure_bench(cfg, per_method)
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    conv = next(b for b in cfg.backbones if b not in LINEAR_ONLY)
    linear = next((b for b in cfg.backbones if b in LINEAR_ONLY), None)
    claims = transfer_claims(results, conv, linear, cfg.lora_rank)
    from .perf import performance

    perf = performance(cfg)
    pngs = figures(metrics, results, cfg)
    doc = results_document(PAPER, cfg.name, list(cfg.seeds), metrics, claims,
                           time.perf_counter() - start, cfg.device, perf)  # fmt: skip
    doc["tuning"] = {"lr_grid": list(cfg.lr_grid), "scale_grid": list(cfg.scale_grid),
                     "split": "validation (a quarter of each task's train split), first seed",
                     "chosen": tuning}  # fmt: skip
    doc["budget"] = {"rule": BUDGET_RULE, "tolerance": BUDGET_TOL, "per_budget": budget}
    write_results(results_dir_of(cfg), cfg.name, doc, pngs)
    return doc


def method_styles() -> dict[str, dict]:
    """One colour per method, the same in every panel and figure; the shuffled-label control is a
    dashed black line rather than another colour."""
    styles = {NAMES[m]: {"color": f"C{i}"} for i, m in enumerate(METHODS)}
    styles[SHUFFLED] = {"color": "black", "ls": "--"}
    return styles


def figures(metrics: dict, results: dict, cfg: Config) -> dict[str, bytes]:
    """The structure and transfer figures as PNG bytes, by file name (paper-*.png for the paper
    preset)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = method_styles()
    prefix = "" if cfg.name == "quick" else f"{cfg.name}-"
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, target in zip(axes, ("tucker", "matrix")):
        for m in STRUCTURE_METHODS:
            d = metrics[NAMES[m]]
            xs = [d[f"structure_{target}_params_r{r}"]["mean"] for r in cfg.struct_levels]
            ys = [
                max(d[f"structure_{target}_relerr_r{r}"]["mean"], 1e-6) for r in cfg.struct_levels
            ]
            ax.plot(xs, ys, "o-", label=NAMES[m], **styles[NAMES[m]])
        ax.axhline(cfg.struct_tol, color="grey", ls="--", lw=0.8)
        ax.set(xscale="log", yscale="log", xlabel="trainable parameters", title=f"{target} target")
    axes[0].set_ylabel("relative error ||dW - dW*|| / ||dW*||")
    axes[0].legend()
    return {
        f"{prefix}structure.png": figure_png(fig),
        f"{prefix}transfer.png": figure_png(transfer_figure(metrics, results)),
    }


def transfer_figure(metrics: dict, results: dict):
    """Accuracy against trainable parameters, one panel per backbone; one legend for the figure
    that names each plotted method once, in the colour it has in every panel."""
    import matplotlib.pyplot as plt

    styles = method_styles()
    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), squeeze=False)
    handles: dict = {}
    for ax, (backbone, cells) in zip(axes[0], results.items()):
        for name in next(iter(cells.values())):
            xs = [metrics[name][f"{backbone}_r{r}_trainable"]["mean"] for r in cells]
            ys = [float(np.mean(cells[r][name])) for r in cells]
            style = {"marker": "o", "ls": "-", **styles[name]}
            if len(xs) == 1:
                style["ls"] = "none"
            (line,) = ax.plot(xs, ys, label=name, **style)
            handles.setdefault(name, line)
        ax.set(xscale="log", xlabel="trainable parameters", ylabel="mean test accuracy (%)",
               title=f"{backbone} (tuned, mean over seeds and tasks)")  # fmt: skip
    fig.legend(list(handles.values()), list(handles), loc="center left",
               bbox_to_anchor=(1.0, 0.5), fontsize=7)  # fmt: skip
    return fig
