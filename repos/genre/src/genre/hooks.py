"""What each command of the generated cli.py runs: this project's wiring."""

from __future__ import annotations

from .commands import standard

COMMANDS = standard(
    train="run one seed of the protocol (GenRe and every baseline); write config.json, the GenRe "
    "checkpoint and metrics.json to --out",
    eval="reload the GenRe checkpoint in --out and evaluate it again on the run's test negatives",
    bench="run every method over --seeds on --bench-datasets; write "
    "<results-dir>/<preset>.json and figures",
)
