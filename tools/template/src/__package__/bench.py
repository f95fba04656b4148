"""Benchmark: every method over the preset's seeds, claims computed from the metrics.

Split into `run_seed` (one seed, every method) and `finish` (claims and the results file), so that
results.drive_bench can also run the seeds as separate jobs and merge them (tools/launch.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .config import Config
from .results import (
    claim,
    drive_bench,
    paired_interval,
    part_from_paired,
    results_document,
    summarize,
    write_results,
)
from .runtime import progress, results_dir_of
from .train import METHODS, train_and_evaluate

PAPER = "__slug__"


def run_seed(cfg: Config, seed: int) -> dict[str, dict[str, float]]:
    """Method -> metric -> value for one seed."""
    run_cfg = dataclasses.replace(cfg, seed=seed)
    return {
        name: train_and_evaluate(run_cfg, Path(cfg.out) / name / f"seed{seed}", which=name)
        for name in METHODS
    }


def finish(cfg: Config, per_seed: dict[int, dict], wall_seconds: float) -> dict:
    """Metrics over seeds, the claims, and the results file."""
    seeds = sorted(per_seed)
    values = {
        m: {k: [per_seed[s][m][k] for s in seeds] for k in per_seed[seeds[0]][m]} for m in METHODS
    }
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in values.items()}
    excess = [
        a / b - 1 for a, b in zip(values["method"]["train_mse"], values["closed_form"]["train_mse"])
    ]
    diff = paired_interval(excess, [0.01] * len(excess))
    claims = [
        claim(
            "gd-reaches-lstsq",
            "gradient descent's training MSE is within 1% of the exact least-squares MSE",
            "placeholder: the paper's number goes here",
            f"excess MSE {100 * diff['mean'] + 1:.3f}% (paired over {diff['n']} seeds)",
            test=[part_from_paired("excess MSE - 1% (fraction)", diff, 0.0, "<")],
        )
    ]
    doc = results_document(PAPER, cfg.name, seeds, metrics, claims, wall_seconds, cfg.device)
    write_results(results_dir_of(cfg), cfg.name, doc)
    return doc


def run_bench(cfg: Config) -> dict:
    return drive_bench(cfg, PAPER, run_seed, finish, progress)
