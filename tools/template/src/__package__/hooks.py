"""What each command of the generated cli.py runs: this project's wiring (edit freely)."""

from __future__ import annotations

from typing import Any

from .config import Config
from .runtime import Command, results_dir_of


def train(cfg: Config) -> dict[str, Any]:
    from .train import train_and_evaluate

    return train_and_evaluate(cfg, cfg.out)


def evaluate(cfg: Config) -> dict[str, Any]:
    from .train import evaluate

    return evaluate(cfg, cfg.out)


def bench(cfg: Config) -> dict[str, Any]:
    from .bench import run_bench

    doc = run_bench(cfg)
    if doc.get("partial"):
        return {"partial": cfg.partial_out, "seeds": sorted(map(int, doc["per_seed"]))}
    return {
        "results": str(results_dir_of(cfg) / f"{cfg.name}.json"),
        "claims": {c["id"]: c.get("verdict", c["holds"]) for c in doc["claims"]},
    }


COMMANDS = {
    "train": Command("train the method with one seed and write metrics to --out", train, ("out",)),
    "eval": Command("load the model saved in --out and evaluate it", evaluate, reads="out"),
    "bench": Command(
        "run every method over --seeds and write <results-dir>/<preset>.json and figures",
        bench,
        ("out", "results_dir"),
    ),
}

# bench honours --partial-out / --merge (bench.py is split into run_seed and finish)
SPLITS_BY_SEED = True
