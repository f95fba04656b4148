"""What each command of the generated cli.py runs: SigKer-CI's wiring."""

from __future__ import annotations

from typing import Any

from .commands import standard
from .paths_cli import DISCOVER_HELP, SIMULATE_HELP
from .runtime import Command


def discover(argv: list[str]) -> dict[str, Any]:
    from .paths_cli import run_discover

    return run_discover(argv)


def simulate(argv: list[str]) -> dict[str, Any]:
    from .paths_cli import run_simulate

    return run_simulate(argv)


COMMANDS = {
    **standard(
        train="run every experiment and method for --seed; write tuning, job records and "
        "metrics to --out",
        eval="recompute the metrics of a finished run in --out from its tuning and job records",
        bench="tune once, run every method over --seeds, write <results-dir>/<preset>.json and "
        "figures",
    ),
    "discover": Command(DISCOVER_HELP, discover, raw=True),
    "simulate": Command(SIMULATE_HELP, simulate, raw=True),
}
