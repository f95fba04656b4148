"""Quick benchmark: every method over the preset's seeds, claims computed from the metrics."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from .config import Config
from .results import atomic_write_json, claim, results_document, summarize
from .train import METHODS, train_and_evaluate

PAPER = "__slug__"


def run_bench(cfg: Config) -> dict:
    start = time.perf_counter()
    per_method: dict[str, dict[str, list[float]]] = {m: {} for m in METHODS}
    for seed in cfg.seeds:
        for name in METHODS:
            run_cfg = dataclasses.replace(cfg, seed=seed)
            workdir = Path(cfg.out) / name / f"seed{seed}"
            for key, value in train_and_evaluate(run_cfg, workdir, which=name).items():
                per_method[name].setdefault(key, []).append(value)
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    ours = metrics["method"]["train_mse"]["mean"]
    ref = metrics["closed_form"]["train_mse"]["mean"]
    claims = [
        claim(
            "gd-reaches-lstsq",
            "gradient descent's training MSE is within 1% of the exact least-squares MSE",
            "placeholder: the paper's number goes here",
            f"{ours:.5f} vs {ref:.5f}",
            ours <= 1.01 * ref,
        )
    ]
    doc = results_document(
        PAPER, cfg.name, list(cfg.seeds), metrics, claims, time.perf_counter() - start, cfg.device
    )
    atomic_write_json(Path(cfg.results_dir) / f"{cfg.name}.json", doc)
    return doc
