"""What each command of the generated cli.py runs: this project's wiring (edit freely)."""

from __future__ import annotations

from .commands import standard

COMMANDS = standard(
    train="train --method on --task with one seed; save the model and metrics in --out",
    eval="reload the model saved in --out and evaluate it again on the run's test split "
    "(and on every molecule of a user's --qm9-csv / --qm9-dir / --md17-npz file)",
)
# No SPLITS_BY_SEED: the bench tunes each arm's lr on the first seed and reuses that run.
