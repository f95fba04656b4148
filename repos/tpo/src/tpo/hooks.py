"""What each command of the generated cli.py runs: this project's wiring."""

from __future__ import annotations

import dataclasses
from typing import Any

from .commands import run_bench, standard
from .config import Config


def bench(cfg: Config) -> dict[str, Any]:
    """The arithmetic benchmark; a --model-dir run is `train`'s alone."""
    if cfg.model_dir:
        raise ValueError("bench runs the arithmetic benchmark; use `train --model-dir` instead")
    return run_bench(cfg)


COMMANDS = standard(
    train="SFT, build trees, train --method with one seed; write metrics and checkpoints to --out",
    eval="reload the policy saved in --out and measure it again on the run's test problems and trees",
)
COMMANDS["bench"] = dataclasses.replace(COMMANDS["bench"], run=bench)
