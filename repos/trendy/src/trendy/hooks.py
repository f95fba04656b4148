"""What each command of the generated cli.py runs: TRENDy's wiring (the standard three)."""

from __future__ import annotations

from .commands import standard

COMMANDS = standard(
    train="train TRENDy and SINDyCP with one seed (--data PATH: snapshots from disk) and write "
    "the model and metrics to --out",
    eval="reload the TRENDy model saved in --out and score it on the run's test trajectories",
)
