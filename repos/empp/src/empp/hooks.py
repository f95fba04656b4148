"""What each command of the generated cli.py runs: this project's wiring (edit freely)."""

from __future__ import annotations

import os

from .commands import standard
from .config import Config


def before_import(cfg: Config) -> None:
    """Pin the CPU threads of the math libraries before torch is imported (train and bench also
    call torch.set_num_threads(cfg.threads)); a bad value is left to validate()."""
    if isinstance(cfg.threads, int) and cfg.threads >= 1:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(cfg.threads)


COMMANDS = standard(
    train="train --method on --task with one seed; save the model and metrics in --out",
    eval="reload the model saved in --out and evaluate it again on the run's test split "
    "(and on every molecule of a user's --qm9-csv / --qm9-dir / --md17-npz file)",
)
# No SPLITS_BY_SEED: the bench tunes each arm's lr on the first seed and reuses that run.
