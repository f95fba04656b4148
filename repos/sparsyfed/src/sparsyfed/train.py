"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from .config import Config, validate
from .federated import run_federated
from .results import atomic_write_json


def summarize_run(
    cfg: Config, state: dict, hist: dict[str, list[float]], layers: dict[str, float]
) -> dict[str, float]:
    """Scalar metrics of one run from its per-round history (Section 4's quantities)."""
    n_params = sum(v.numel() for v in state.values() if v.is_floating_point())
    dense_upload = float(n_params * cfg.clients_per_round * cfg.rounds)
    uploaded = float(sum(hist["uploaded_nonzeros"]))
    target_density = 1.0 - (cfg.sparsity if cfg.method != "dense" else 0.0)
    flips = hist["mask_regrowth"][1:] or hist["mask_regrowth"]  # round 1: from the dense init
    return {
        "accuracy": hist["acc_dense"][-1],
        "accuracy_pruned": hist["acc_pruned"][-1],
        "accuracy_untrained": hist["acc_init"][0],
        "mean_regrowth": float(np.mean(hist["regrowth"])),
        "mean_mask_regrowth": float(np.mean(flips)),
        "final_density": hist["density"][-1],
        "density_excess": hist["density"][-1] - target_density,
        "mean_iou": float(np.mean(hist["iou"])),
        "init_mask_iou": hist["init_mask_iou"][0],
        "uploaded_nonzeros": uploaded,
        "comm_ratio": dense_upload / uploaded,
        "seconds_per_round": float(np.mean(hist["seconds"])),
        "min_layer_density": min(layers.values()),
    }


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Run cfg.method federatedly for cfg.seed; writes config.json first, then metrics/history."""
    validate(cfg)
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    show = not cfg.quiet and sys.stderr.isatty()
    bar = tqdm(total=cfg.rounds, desc=f"{cfg.method} s={cfg.sparsity}", disable=not show)

    def on_round(t: int, last: dict) -> None:
        bar.update(1)
        if "acc_dense" in last:
            bar.set_postfix(acc=f"{last['acc_dense']:.3f}", regrow=f"{last['regrowth']:.4f}")

    state, hist, layers = run_federated(cfg, on_round)
    bar.close()
    metrics = summarize_run(cfg, state, hist, layers)
    atomic_write_json(workdir / "history.json", {"history": hist, "layer_density": layers})
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
