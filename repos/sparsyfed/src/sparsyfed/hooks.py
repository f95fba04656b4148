"""What each command of the generated cli.py runs: this project's wiring."""

from __future__ import annotations

import os

from .commands import standard
from .config import Config
from .runtime import Command

SPLITS_BY_SEED = True
"""bench.run_bench runs through results.drive_bench (--partial-out / --merge)."""

COMMANDS = standard(
    train="run --method federatedly with one seed; the global model and metrics go to --out",
    eval="load the global model saved in --out and test it again (dense and pruned accuracy; "
    "--eval-file adds a CIFAR-10 python batch file)",
)


def _flower(cfg: Config) -> dict:
    from .flower_app import flower_train

    return flower_train(cfg)


COMMANDS["flower"] = Command(
    "run --method on Flower's Simulation Engine (Ray) with the preset's client resources; "
    "the global model goes to --out (eval reads it)",
    _flower,
    ("out",),
)


def before_import(cfg: Config) -> None:
    """Flower sends usage telemetry unless told not to; set before flwr is imported."""
    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
