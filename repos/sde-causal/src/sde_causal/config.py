"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`sde-causal train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for graphs, SDE parameters, Brownian paths and permutations."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """Device label recorded in the results (all computation is numpy float64 on the CPU)."""
    out: str = "runs/quick"
    """Folder for config.json and metrics.json of a single run."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    n_paths: int = 100
    """Independent sample paths per data set (the CI test's sample size n)."""
    fine_steps: int = 400
    """Euler-Maruyama steps on [0, 1]."""
    n_obs: int = 21
    """Observation times per path (subsampled from the fine grid)."""
    irregular: bool = False
    """Observe each path at its own random times in every experiment (the *_irregular rows always do)."""
    irregular_reps: int = 1
    """Rounds of the irregular-sampling rows: each null triple once, 3 drift and 3 diffusion edges."""
    delay: float = 0.0
    """Delay of every coupling in the simulated SDEs (0: none)."""
    n_hidden: int = 1
    """Variables hidden from each random graph of the partial-observation rows (0: no such rows)."""
    cut: float = 0.5
    """Cut time s: past segment [0, s], future segment [s, s + horizon]."""
    horizon: float = 0.5
    """Length h of the future segment."""
    refinement: int = 1
    """Dyadic refinement order of the PDE solver (each increment split into 2^r pieces)."""
    n_perm: int = 200
    """Permutations of the conditional permutation null."""
    ridge: float = 0.01
    """Kernel ridge regulariser of the conditioning step, as a multiple of n."""
    alpha: float = 0.05
    """Level of every CI test and of the Benjamini-Hochberg step."""
    null_reps: int = 1
    """Data sets per (SDE family, null triple) for the type-I error."""
    power_reps: int = 2
    """Data sets per SDE family for the power on a single edge."""
    n_graphs: int = 2
    """Random 4-5 variable graphs for SHD / F1."""
    lags: int = 2
    """Lags of Granger and tau_max of PCMCI."""
    pysiglib_sizes: tuple[int, ...] = (100, 400)
    """Gram sizes timed against pysiglib in the benchmark's performance figures."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "full": Config(
        name="full",
        out="runs/full",
        seeds=tuple(range(10)),
        n_paths=400,
        fine_steps=1000,
        n_obs=101,
        refinement=2,
        n_perm=1000,
        null_reps=25,
        power_reps=25,
        irregular_reps=25,
        n_graphs=20,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    if not 0 < cfg.alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {cfg.alpha}")
    if not 0 < cfg.cut < cfg.cut + cfg.horizon <= 1:
        raise ValueError(
            f"need 0 < cut < cut + horizon <= 1, got cut={cfg.cut}, horizon={cfg.horizon}"
        )
    if cfg.n_paths < 8:
        raise ValueError(f"n_paths must be >= 8, got {cfg.n_paths}")
    if not 4 <= cfg.n_obs <= cfg.fine_steps + 1:
        raise ValueError(f"n_obs must be in [4, fine_steps + 1], got {cfg.n_obs}")
    if cfg.n_perm < 1 or cfg.refinement < 0 or cfg.ridge <= 0 or cfg.lags < 1:
        raise ValueError("need n_perm >= 1, refinement >= 0, ridge > 0 and lags >= 1")
    if min(cfg.null_reps, cfg.power_reps, cfg.n_graphs) < 1:
        raise ValueError("null_reps, power_reps and n_graphs must be >= 1")
    if cfg.irregular_reps < 0 or cfg.n_hidden < 0 or cfg.delay < 0:
        raise ValueError("irregular_reps, n_hidden and delay must be >= 0")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    return cfg
