"""What each command of the generated cli.py runs: this project's wiring (edit freely)."""

from __future__ import annotations

from .commands import standard

COMMANDS = standard(
    train="train the method with one seed and write metrics to --out",
    eval="load the model saved in --out and evaluate it",
)

# bench honours --partial-out / --merge (bench.py is split into run_seed and finish)
SPLITS_BY_SEED = True
