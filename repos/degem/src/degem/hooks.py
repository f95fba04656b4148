"""What each command of the generated cli.py runs: DeGEM's wiring."""

from __future__ import annotations

import os

from .commands import standard
from .config import Config

# Cross-machine reproducibility: DeGEM's training is chaotic, so a different rounding in one
# kernel (AVX2 vs AVX-512 paths in ATen, MKL's per-CPU code paths) moves its last-epoch AUROC by
# up to ~20 points (README, Deviations). Pin both to CPU-independent code paths unless the user
# chose otherwise; this only works before torch is imported, hence here and not in the library.
PINNED_ENV = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}


def before_import(cfg: Config) -> None:
    """Pin torch's and MKL's CPU code paths (PINNED_ENV) before torch is imported."""
    for key, value in PINNED_ENV.items():
        os.environ.setdefault(key, value)


COMMANDS = standard(
    train="train every method on one graph and seed; write config, models and metrics to --out",
    eval="load the models saved in --out and evaluate them again on the regenerated graphs",
)
