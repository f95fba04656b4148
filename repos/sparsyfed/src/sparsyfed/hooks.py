"""What each command of the generated cli.py runs: this project's wiring."""

from __future__ import annotations

import os

from .commands import standard
from .config import Config

SPLITS_BY_SEED = True
"""bench.run_bench runs through results.drive_bench (--partial-out / --merge)."""

COMMANDS = standard(
    train="run --method federatedly with one seed; the global model and metrics go to --out",
    eval="load the global model saved in --out and test it again (dense and pruned accuracy)",
)


def before_import(cfg: Config) -> None:
    """Flower sends usage telemetry unless told not to; set before flwr is imported."""
    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
