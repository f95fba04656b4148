"""What each command of the generated cli.py runs: this project's wiring. train and eval work on
one folder per method (--out/<method>/), so they replace the standard entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .commands import standard
from .config import Config
from .runtime import Command


def train(cfg: Config) -> dict[str, Any]:
    from .train import train_and_evaluate

    return {m: train_and_evaluate(cfg, Path(cfg.out) / m, m) for m in cfg.methods}


def evaluate(cfg: Config) -> dict[str, Any]:
    from .train import evaluate_runs

    return evaluate_runs(cfg, cfg.out)


COMMANDS = {
    **standard(
        train="",
        eval="",
        bench="run the floors, the untrained control and every method over --seeds; write "
        "<results-dir>/<preset>.json and figures",
    ),
    "train": Command(
        "train every method of --methods with --seed; config.json, model.safetensors and "
        "metrics.json to --out/<method>/",
        train,
        ("out",),
    ),
    "eval": Command(
        "reload the models trained in --out/<method>/ (or the one run in --out) and evaluate "
        "them again on the test pairs",
        evaluate,
        reads="out",
    ),
}
