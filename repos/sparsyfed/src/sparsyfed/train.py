"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through;
evaluate(cfg, workdir) reloads the global model a run saved and tests it again."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save as safetensors_bytes
from tqdm import tqdm

from .baselines import method_spec
from .config import Config, validate
from .data import load_cifar_batch
from .federated import accuracy, new_model, pruned_copy, run_federated, split_of
from .powerprop import sparsy_layers
from .results import atomic_write_bytes, atomic_write_json, load_safetensors, read_json
from .sparsity import layer_densities, prunable_masks

MODEL = "model.safetensors"
"""The final global model (state dict) of a `train` run."""


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
        **({"val_accuracy": hist["acc_val"][0]} if "acc_val" in hist else {}),
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

    tic = time.perf_counter()
    state, hist, layers = run_federated(cfg, on_round)
    bar.close()
    metrics = summarize_run(cfg, state, hist, layers)
    metrics["train_seconds"] = time.perf_counter() - tic  # this run's own wall time
    tensors = {k: v.detach().cpu().contiguous() for k, v in state.items()}
    atomic_write_bytes(workdir / MODEL, safetensors_bytes(tensors))
    atomic_write_json(workdir / "history.json", {"history": hist, "layer_density": layers})
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Load the global model a previous `train` saved in workdir and test it again: accuracy of
    the dense aggregate and of its copy pruned to the run's sparsity, and its density. The run's
    config.json fixes model, data and seed; this command's flags only choose device and threads,
    and --eval-file adds the same two accuracies on a CIFAR-10 python batch file of the user's
    (`accuracy_file`, `accuracy_pruned_file`)."""
    workdir = Path(workdir)
    config_path = workdir / "config.json"
    saved = read_json(config_path, "run config")
    if not isinstance(saved, dict) or "arch" not in saved:
        raise ValueError(f"{config_path}: not a config written by train (no arch field)")
    fields = {f.name for f in dataclasses.fields(Config)} - {"device", "threads", "quiet", "out"}
    fields -= {"eval_file"}  # this command's own flag, never the saved one
    try:
        run_cfg = dataclasses.replace(
            cfg,
            **{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k in fields},
        )
        validate(run_cfg)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{config_path}: not a usable run config ({exc})") from None
    if cfg.eval_file and run_cfg.dataset not in ("cifar10", "synth_cifar10"):
        raise ValueError(
            f"--eval-file {cfg.eval_file}: a CIFAR-10 batch needs a run trained on cifar10 or "
            f"synth_cifar10; {workdir} was trained on {run_cfg.dataset}"
        )
    extra = load_cifar_batch(cfg.eval_file) if cfg.eval_file else None
    torch.set_num_threads(run_cfg.threads)
    model = new_model(run_cfg)
    fresh = model.state_dict()
    path = workdir / MODEL
    loaded = load_safetensors(path)
    if {k: tuple(v.shape) for k, v in loaded.items()} != {
        k: tuple(v.shape) for k, v in fresh.items()
    }:
        raise ValueError(f"{path}: tensors do not fit the run's {run_cfg.arch} model")
    state = {k: v.to(fresh[k].device) for k, v in loaded.items()}
    _, (xte, yte), _ = split_of(run_cfg)
    names = [f"{n}.weight" for n, _ in sparsy_layers(model)]
    pruned = pruned_copy(model, state, method_spec(run_cfg).sparsity)
    out = {
        "accuracy": accuracy(model, state, xte, yte),
        "accuracy_pruned": accuracy(model, pruned, xte, yte),
        "final_density": float(prunable_masks(state, names).float().mean()),
    }
    if extra is not None:
        out["accuracy_file"] = accuracy(model, state, *extra)
        out["accuracy_pruned_file"] = accuracy(model, pruned, *extra)
    model.load_state_dict(state)
    out["min_layer_density"] = min(layer_densities(model).values())
    return out
