"""What each command of the generated cli.py runs: this project's wiring."""

from __future__ import annotations

from .commands import standard

COMMANDS = standard(
    train="fit --method on --task with one seed; write config.json, the weights and metrics.json "
    "to --out",
    eval="rebuild the models of the run in --out, load their saved weights and measure them again",
    bench="tune and run every method over --seeds; write <results-dir>/<preset>.json and figures",
)
