"""Benchmark: every method over the preset's seeds, claims computed from the metrics."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from .config import Config
from .results import (
    claim,
    paired_interval,
    part_from_paired,
    results_document,
    summarize,
    write_results,
)
from .runtime import progress, results_dir_of
from .train import METHODS, train_and_evaluate

PAPER = "__slug__"


def run_bench(cfg: Config) -> dict:
    start = time.perf_counter()
    per_method: dict[str, dict[str, list[float]]] = {m: {} for m in METHODS}
    runs = [(seed, name) for seed in cfg.seeds for name in METHODS]
    for seed, name in progress(runs, "bench", cfg.quiet):
        run_cfg = dataclasses.replace(cfg, seed=seed)
        workdir = Path(cfg.out) / name / f"seed{seed}"
        for key, value in train_and_evaluate(run_cfg, workdir, which=name).items():
            per_method[name].setdefault(key, []).append(value)
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    ratio = [
        a / b - 1
        for a, b in zip(per_method["method"]["train_mse"], per_method["closed_form"]["train_mse"])
    ]
    diff = paired_interval(ratio, [0.01] * len(ratio))
    claims = [
        claim(
            "gd-reaches-lstsq",
            "gradient descent's training MSE is within 1% of the exact least-squares MSE",
            "placeholder: the paper's number goes here",
            f"excess MSE {100 * diff['mean'] + 1:.3f}% (paired over {diff['n']} seeds)",
            test=[part_from_paired("excess MSE - 1% (fraction)", diff, 0.0, "<")],
        )
    ]
    doc = results_document(
        PAPER, cfg.name, list(cfg.seeds), metrics, claims, time.perf_counter() - start, cfg.device
    )
    write_results(results_dir_of(cfg), cfg.name, doc)
    return doc
