"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through;
evaluate(cfg, workdir) loads the model a run saved and evaluates it again."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from . import baselines, data, method
from .config import Config, validate
from .results import atomic_write_json, load_safetensors, read_config, save_safetensors
from .runtime import resolve_device

METHODS = ("method", "closed_form")


def fit(name: str, x: torch.Tensor, y: torch.Tensor, cfg: Config) -> torch.Tensor:
    if name == "method":
        return method.gradient_descent(x, y, cfg.steps, cfg.lr)
    if name == "closed_form":
        return baselines.closed_form(x, y)
    raise ValueError(f"unknown method {name!r}; expected one of {METHODS}")


def metrics_of(w: torch.Tensor, cfg: Config) -> dict[str, float]:
    """The preset's test metrics of weights w (data regenerated from cfg.seed)."""
    x, y, w_true = data.linear_regression(cfg.n_samples, cfg.dim, cfg.seed)
    w = w.to(x.dtype).cpu()
    return {
        "train_mse": float(method.squared_loss(w, x, y)),
        "weight_error": float((w - w_true).norm()),
    }


def train_and_evaluate(cfg: Config, workdir: str | Path, which: str = "method") -> dict[str, float]:
    """Train one method for cfg.seed, save its weights and metrics; writes config.json first."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    torch.manual_seed(cfg.seed)
    x, y, _ = data.linear_regression(cfg.n_samples, cfg.dim, cfg.seed)
    device = resolve_device(cfg.device)  # "auto" from a library call, not only from the CLI
    w = fit(which, x.to(device), y.to(device), cfg)
    save_safetensors(workdir / "model.safetensors", {"w": w})
    metrics = metrics_of(w, cfg)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Load the weights a previous `train` saved in workdir and evaluate them again."""
    workdir = Path(workdir)
    run_cfg = read_config(workdir / "config.json", Config, validate)
    return metrics_of(load_safetensors(workdir / "model.safetensors")["w"], run_cfg)
