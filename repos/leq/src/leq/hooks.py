"""What each command of the generated cli.py runs: LEQ's wiring."""

from __future__ import annotations

import os
import sys

from .commands import standard
from .config import Config


def before_import(cfg: Config) -> None:
    """XLA's thread count and JAX's platform must be set before jax is first imported."""
    if "jax" in sys.modules:
        return
    os.environ.setdefault(
        "XLA_FLAGS",
        f"--xla_cpu_multi_thread_eigen={'true' if cfg.threads > 1 else 'false'} "
        f"intra_op_parallelism_threads={cfg.threads}",
    )
    # cpu pins JAX to the CPU; cuda / auto let JAX pick its GPU backend where there is one
    os.environ.setdefault("JAX_PLATFORMS", "cpu" if cfg.device == "cpu" else "")


COMMANDS = standard(
    train="train --method on --env with one seed; write config, checkpoint and metrics to --out",
    eval="load the actor saved in --out and evaluate it again on the run's task",
)
