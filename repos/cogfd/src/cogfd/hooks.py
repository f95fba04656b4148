"""What each command of the generated cli.py runs: this project's wiring (edit freely)."""

from __future__ import annotations

import dataclasses
from typing import Any

from .commands import standard
from .config import Config


def evaluate(cfg: Config) -> dict[str, Any]:
    """train.evaluate_saved (train.py's name `evaluate` is the metrics module)."""
    from .train import evaluate_saved

    return evaluate_saved(cfg, cfg.out)


COMMANDS = standard(
    train="pretrain the model, erase with every method at --seed, save the edited models and "
    "metrics in --out",
    eval="load the base and edited models saved in --out and evaluate them again",
)
COMMANDS["eval"] = dataclasses.replace(COMMANDS["eval"], run=evaluate)
# No SPLITS_BY_SEED: the bench tunes on the validation seed first and its stall experiment and
# ablations need every seed's results, so --partial-out / --merge are refused.
