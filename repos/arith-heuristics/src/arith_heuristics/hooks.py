"""What each command of the generated cli.py runs: the Bag-of-Heuristics wiring (the standard
three)."""

from __future__ import annotations

from .commands import standard

COMMANDS = standard(
    train="train the toy model with one seed (or load --checkpoint), run the whole analysis and "
    "write checkpoints, metrics.json, analysis.json and heuristics.json to --out",
    eval="reload the final checkpoint saved in --out and score it on the run's train/test prompts",
    bench="train and analyse one model per seed under --out/seed<N>, then write "
    "<results-dir>/<preset>.json and figures",
)
