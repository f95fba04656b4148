"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`__cli__ train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for data, initialisation and sampling."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """Torch device (cpu, cuda, cuda:1, ...)."""
    out: str = "runs/quick"
    """Folder for config.json, metrics.json, checkpoints and figures."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    resume: bool = False
    """Continue from the last checkpoint in --out."""
    n_samples: int = 256
    """Training examples of the toy regression problem."""
    dim: int = 8
    """Input dimension of the toy problem."""
    steps: int = 200
    """Gradient steps."""
    lr: float = 0.05
    """Learning rate."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "full": Config(
        name="full", out="runs/full", device="cuda", n_samples=1_000_000, dim=512, steps=20_000
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    if cfg.steps < 1:
        raise ValueError(f"steps must be >= 1, got {cfg.steps}")
    if cfg.lr <= 0:
        raise ValueError(f"lr must be > 0, got {cfg.lr}")
    if cfg.n_samples < 2 or cfg.dim < 1:
        raise ValueError(f"need n_samples >= 2 and dim >= 1, got {cfg.n_samples} and {cfg.dim}")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    return cfg
