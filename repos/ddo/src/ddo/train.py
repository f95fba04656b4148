"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

One seed: the soft-tilt problem (DA, then every sampler of the same tilted distribution, scored
against the grid optimum q_hat), the hard-tilt problem (DDO's sampler against short-run
Langevin), exact DA on the grid, and with cfg.images the image experiment (ddo.images).
The experiments live in ddo.experiments; metric keys are "<method>/<metric>".
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import torch

from .config import Config, validate
from .experiments import grid_da_rows, optimum, problem, run_hard, run_soft
from .results import atomic_write_bytes, atomic_write_json

__all__ = ["METHODS", "evaluate", "optimum", "problem", "train_and_evaluate"]

METHODS = (
    "DDO (exact score)", "DDO (learned score)", "Diffusion-DPO", "Learned reference", "ULA",
    "MALA", "Importance resampling", "Reference",
)  # fmt: skip


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Run DDO and every baseline for cfg.seed; writes workdir/config.json first."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    g = torch.Generator().manual_seed(cfg.seed)
    metrics, samples = run_soft(cfg, g)
    hard_metrics, hard_samples = run_hard(cfg, g)
    metrics.update(hard_metrics)
    metrics.update(grid_da_rows(cfg))
    save_samples(workdir / "samples.npz", samples)
    save_samples(workdir / "samples_hard.npz", hard_samples)
    if cfg.images:
        from .images import run_images  # needs diffusers (the images extra)

        metrics.update(run_images(cfg, workdir, g))
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def save_samples(path: Path, samples: dict[str, torch.Tensor]) -> None:
    """Every method's samples as one .npz (read back by the benchmark's figures)."""
    buf = io.BytesIO()
    np.savez(buf, **{name: x.numpy() for name, x in samples.items()})
    atomic_write_bytes(path, buf.getvalue())


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    try:
        metrics = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a readable metrics file ({exc})") from None
    if not isinstance(metrics, dict):
        # a ValueError, not a TypeError: the CLI reports ValueErrors as misuse (exit 2)
        raise ValueError(f"{path} holds {type(metrics).__name__}, expected a JSON object")  # noqa: TRY004
    return metrics
