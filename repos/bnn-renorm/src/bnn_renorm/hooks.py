"""What each command of the generated cli.py runs: BNN-Renorm's wiring."""

from __future__ import annotations

from .commands import standard

COMMANDS = standard(
    train="run every estimator and sampler for --seed; write metrics and the sublinear "
    "estimator's networks to --out (default preset: demo, one to two minutes)",
    eval="re-score the run in --out: the estimators again, on its saved networks, against the "
    "ground truth it saved",
    bench="run train over --seeds, then write <results-dir>/<preset>.json and figures "
    "(default preset: quick)",
    train_preset="demo",
)
