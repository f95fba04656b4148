"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`__cli__ train --help`). Bounds stand beside their fields
(`Annotated[int, Ge(1)]`) and are checked by runtime.check_bounds; `validate` adds the checks that
involve several fields. Presets are plain instances; nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

from .runtime import Annotated, Ge, Gt, RunConfig, check_bounds


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    n_samples: Annotated[int, Ge(2)] = 256
    """Training examples of the toy regression problem."""
    dim: Annotated[int, Ge(1)] = 8
    """Input dimension of the toy problem."""
    steps: Annotated[int, Ge(1)] = 200
    """Gradient steps."""
    lr: Annotated[float, Gt(0)] = 0.05
    """Learning rate."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "paper": Config(name="paper", out="runs/paper", n_samples=4096, dim=32, steps=2000),
    "full": Config(
        name="full", out="runs/full", device="auto", n_samples=1_000_000, dim=512, steps=20_000
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    if cfg.n_samples <= cfg.dim:
        raise ValueError(f"n_samples must exceed dim, got {cfg.n_samples} <= {cfg.dim}")
    return cfg
