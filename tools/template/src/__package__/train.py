"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from . import baselines, data, method
from .config import Config, validate
from .results import atomic_write_json

METHODS = ("method", "closed_form")


def fit(name: str, x: torch.Tensor, y: torch.Tensor, cfg: Config) -> torch.Tensor:
    if name == "method":
        return method.gradient_descent(x, y, cfg.steps, cfg.lr)
    if name == "closed_form":
        return baselines.closed_form(x, y)
    raise ValueError(f"unknown method {name!r}; expected one of {METHODS}")


def train_and_evaluate(cfg: Config, workdir: str | Path, which: str = "method") -> dict[str, float]:
    """Train one method for cfg.seed and return its metrics; writes workdir/config.json first."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    torch.manual_seed(cfg.seed)
    x, y, w_true = data.linear_regression(cfg.n_samples, cfg.dim, cfg.seed)
    x, y = x.to(cfg.device), y.to(cfg.device)
    w = fit(which, x, y, cfg)
    metrics = {
        "train_mse": float(method.squared_loss(w, x, y)),
        "weight_error": float((w.cpu() - w_true).norm()),
    }
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
