"""What each command of the generated cli.py runs: this project's wiring."""

from __future__ import annotations

import dataclasses
from typing import Any

from .commands import run_bench, run_train, standard
from .config import Config


def with_demo(cfg: Config) -> Config:
    """--demo DIR: write a tiny random Llama and official-format trees there and use them."""
    if not cfg.demo:
        return cfg
    from .hf import write_demo

    model_dir, trees = write_demo(cfg.demo, cfg.seed)
    return dataclasses.replace(cfg, demo="", model_dir=str(model_dir), trees=str(trees))


def bench(cfg: Config) -> dict[str, Any]:
    """The benchmark: the arithmetic task, or with --model-dir (the full preset) every method
    on the trees of --trees with LoRA on the local causal LM."""
    return run_bench(with_demo(cfg))


COMMANDS = standard(
    train="SFT, build trees, train --method with one seed; write metrics and checkpoints to --out",
    eval="reload the policy saved in --out and measure it again on the run's test problems and trees",
)
COMMANDS["bench"] = dataclasses.replace(COMMANDS["bench"], run=bench)
COMMANDS["train"] = dataclasses.replace(COMMANDS["train"], run=lambda c: run_train(with_demo(c)))
