"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`stch-set train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from .data import SPECS, sizes

METHODS: dict[str, str] = {
    "stch-set": "STCH-Set",
    "tch-set": "TCH-Set",
    "som": "SoM",
    "stch": "STCH (random pref)",
    "tch": "TCH (random pref)",
    "ls": "LS (random pref)",
    "nsga3": "NSGA-III + greedy K",
}
"""Method key (flag value) -> label in results/*.json."""


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for data, initialisation and preferences (train/eval)."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """Torch device (cpu, cuda, cuda:1, ...)."""
    out: str = "runs/quick"
    """Folder `train` writes config.json and metrics.json into (`eval` reads it)."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    problem: str = "quadratic"
    """Problem `train` solves: quadratic, linear, nonlinear or deep."""
    method: str = "stch-set"
    """Method `train` runs: stch-set, tch-set, som, stch, tch, ls or nsga3."""
    problems: tuple[str, ...] = ("quadratic", "linear", "nonlinear")
    """Problems the benchmark runs."""
    methods: tuple[str, ...] = tuple(METHODS)
    """Methods the benchmark runs (stch-set must be among them for the claims)."""
    m: int | None = None
    """Number of objectives; None takes the paper's value (128 quadratic, 1000 regression)."""
    k: int | None = None
    """Number of solutions K; None takes the paper's value (5, or 10 for nonlinear)."""
    n_dim: int = 10
    """Input dimension n of every problem."""
    steps: int = 2000
    """Optimisation steps of every gradient method."""
    optimizer: Literal["schedulefree", "adam"] = "schedulefree"
    """schedulefree: SGD-SF for vectors, AdamW-SF for networks (official); adam: torch Adam."""
    lr: float = 1e-2
    """Learning rate."""
    warmup_steps: int = 100
    """Warm-up steps of the schedule-free optimisers."""
    mu: float = 0.1
    """STCH-Set smoothing parameter (both levels)."""
    mu_anneal: float = 3e-4
    """If > 0, network problems use mu_t = exp(-mu_anneal * t) (official nonlinear script)."""
    pref_mu: float = 0.01
    """Smoothing parameter of the random-preference STCH baseline."""
    nsga_pop: int = 100
    """NSGA-III population (and number of Dirichlet reference directions)."""
    nsga_generations: int = 100
    """NSGA-III generations."""
    nsga_bound: float = 3.0
    """NSGA-III searches every parameter in [-bound, bound]."""
    k_sweep: tuple[int, ...] = ()
    """Benchmark sweep over K on the quadratic problem (empty: no sweep)."""
    m_sweep: tuple[int, ...] = ()
    """Benchmark sweep over m on the quadratic problem (empty: no sweep)."""
    perf_steps: int = 300
    """Steps timed for the vectorised step time in the performance figures."""
    reference_steps: int = 3
    """Steps timed for the unvectorised reference loop in the performance figures."""
    target_steps: int = 10_000
    """Step cap of the run timed to the official worst case (stops as soon as it is reached)."""
    perf_m: tuple[int, ...] = (128, 512, 2048)
    """Objective counts m of the step-cost growth figure (K = 5)."""
    perf_k: tuple[int, ...] = (3, 5, 10, 20)
    """Solution counts K of the step-cost growth figure (m = 128)."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "full": Config(
        name="full",
        out="runs/full",
        device="cuda",
        seeds=tuple(range(10)),
        problems=("quadratic", "linear", "nonlinear", "deep"),
        steps=10_000,
        nsga_pop=300,
        nsga_generations=500,
        k_sweep=(3, 5, 8, 10),
        m_sweep=(128, 1024),
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    for field in ("mu", "pref_mu", "lr", "nsga_bound"):
        value = getattr(cfg, field)
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{field} must be a finite number > 0, got {value}")
    if cfg.mu_anneal < 0:
        raise ValueError(f"mu_anneal must be >= 0, got {cfg.mu_anneal}")
    for field in (
        "steps",
        "n_dim",
        "nsga_pop",
        "nsga_generations",
        "perf_steps",
        "reference_steps",
        "target_steps",
    ):
        if getattr(cfg, field) < 1:
            raise ValueError(f"{field} must be >= 1, got {getattr(cfg, field)}")
    if cfg.warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, got {cfg.warmup_steps}")
    for name in (cfg.problem, *cfg.problems):
        if name not in SPECS:
            raise ValueError(f"unknown problem {name!r}; expected one of {sorted(SPECS)}")
    for name in (cfg.method, *cfg.methods):
        if name not in METHODS:
            raise ValueError(f"unknown method {name!r}; expected one of {sorted(METHODS)}")
    if (
        not cfg.perf_m
        or not cfg.perf_k
        or min(cfg.perf_m) < 5
        or not 1 <= min(cfg.perf_k) <= max(cfg.perf_k) <= 128
    ):
        raise ValueError(
            f"perf_m must be >= 5 (K=5) and perf_k in [1, 128] (m=128), got {cfg.perf_m}, {cfg.perf_k}"
        )
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    for problem in (cfg.problem, *cfg.problems):
        m, k = sizes(problem, cfg.m, cfg.k)
        if m < 1 or k < 1 or k > m:
            raise ValueError(
                f"need 1 <= K <= m (few solutions for many objectives), got K={k}, m={m}"
            )
    for k in cfg.k_sweep:
        for m in cfg.m_sweep or (SPECS["quadratic"].m,):
            if not 1 <= k <= m:
                raise ValueError(f"k_sweep/m_sweep need 1 <= K <= m, got K={k}, m={m}")
    return cfg
