"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`stch-set train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from .data import SPECS, USER, sizes

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
OFFICIAL_INIT_PROBLEMS = ("quadratic", "linear", "nonlinear")
"""Problems of the official scripts, whose initialisation `--init official` replays."""


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
    threads: int = 1
    """CPU threads torch may use per process (1: these tensors are tiny, more threads only add
    overhead; measured in the README)."""
    workers: int = 1
    """Benchmark worker processes, each with `threads` threads (1: everything in this process)."""
    problem: str = "quadratic"
    """Problem `train` solves: quadratic, linear, nonlinear or deep."""
    problem_file: str = ""
    """CSV of a user problem, one row a_i1,...,a_in,b_i per objective: f_i(x) = (a_i.x - b_i)^2.
    Replaces --problem (train) and --problems (bench)."""
    problem_entry: str = ""
    """User problem as a Python entry point module:function mapping a (K, n_dim) tensor to the
    (K, m) objectives. Replaces --problem / --problems."""
    init: Literal["ours", "official"] = "ours"
    """Initial solutions of `train`: ours (a generator seeded seed + 10000) or official (the
    official scripts' global RNG stream, replayed; quadratic, linear and nonlinear only)."""
    method: str = "stch-set"
    """Method `train` runs: stch-set, tch-set, som, stch, tch, ls or nsga3."""
    problems: tuple[str, ...] = ("quadratic", "linear", "nonlinear")
    """Problems the benchmark runs."""
    methods: tuple[str, ...] = tuple(METHODS)
    """Methods the benchmark runs (stch-set must be among them for the claims)."""
    m: int | None = None
    """Number of objectives; None takes the paper's value (128 quadratic, 1000 regression)."""
    k: int | None = None
    """Number of solutions K; None takes the paper's value (5, or 10 for nonlinear) or 5 for a
    user problem."""
    n_dim: int = 10
    """Input dimension n of every problem."""
    steps: int = 2000
    """Optimisation steps of every gradient method."""
    optimizer: Literal["schedulefree", "adam"] = "schedulefree"
    """schedulefree: SGD-SF for vectors, AdamW-SF for networks (official); adam: torch Adam."""
    lr: float = 1e-2
    """Learning rate of `train` (the benchmark picks one per method from tune_lrs)."""
    tune_lrs: tuple[float, ...] = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0)
    """Benchmark learning-rate grid, the same for every gradient method (empty: use lr); an
    evaluation run that diverges falls back to the next smaller value."""
    tune_seeds: tuple[int, ...] = (100, 101)
    """Validation instances the learning rate is chosen on (disjoint from seeds)."""
    tune_steps: int = 2000
    """Steps of each tuning run."""
    compare_init_methods: tuple[str, ...] = ("stch-set", "tch-set", "som")
    """Methods the benchmark also runs from the official initialisation (empty: none)."""
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
    official_steps: int = 200
    """Steps timed for the port of the official training step in the performance figures."""
    target_steps: int = 10_000
    """Step cap of the run timed to the official worst case (stops as soon as it is reached)."""
    perf_m: tuple[int, ...] = (128, 512, 2048)
    """Objective counts m of the step-cost growth figure (K = 5)."""
    perf_k: tuple[int, ...] = (3, 5, 10, 20)
    """Solution counts K of the step-cost growth figure (m = 128)."""


PRESETS: dict[str, Config] = {
    "quick": Config(workers=2),
    "paper": Config(
        name="paper",
        out="runs/paper",
        workers=2,
        seeds=tuple(range(10)),
        steps=10_000,
        tune_seeds=(100, 101, 102),
        # quick's TCH-Set on quadratic picks its grid's upper edge (1) while still improving
        tune_lrs=(1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0, 3.0),
    ),
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
        tune_seeds=(100, 101, 102),
        tune_steps=10_000,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    for field, value in [(f, getattr(cfg, f)) for f in ("mu", "pref_mu", "lr", "nsga_bound")] + [
        ("tune_lrs", v) for v in cfg.tune_lrs
    ]:
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
        "official_steps",
        "target_steps",
        "threads",
        "workers",
        "tune_steps",
    ):
        if getattr(cfg, field) < 1:
            raise ValueError(f"{field} must be >= 1, got {getattr(cfg, field)}")
    if cfg.warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, got {cfg.warmup_steps}")
    if cfg.problem_file and cfg.problem_entry:
        raise ValueError("give --problem-file or --problem-entry, not both")
    for name in (cfg.problem, *cfg.problems):
        if name not in SPECS:
            raise ValueError(f"unknown problem {name!r}; expected one of {sorted(SPECS)}")
    for name in (cfg.method, *cfg.methods, *cfg.compare_init_methods):
        if name not in METHODS:
            raise ValueError(f"unknown method {name!r}; expected one of {sorted(METHODS)}")
    if "nsga3" in cfg.compare_init_methods:
        raise ValueError("compare_init_methods takes gradient methods only, got nsga3")
    if cfg.init not in ("ours", "official"):
        raise ValueError(f"init must be ours or official, got {cfg.init!r}")
    user = bool(cfg.problem_file or cfg.problem_entry)
    if cfg.init == "official" and (user or cfg.problem not in OFFICIAL_INIT_PROBLEMS):
        raise ValueError(
            f"--init official replays the official scripts and exists for "
            f"{', '.join(OFFICIAL_INIT_PROBLEMS)} only, got problem "
            f"{USER if user else repr(cfg.problem)}"
        )
    if user and cfg.m is not None:
        raise ValueError("--m does not apply to a user problem: its m is fixed by the problem")
    if min((cfg.seed, *cfg.seeds, *cfg.tune_seeds)) < 0:
        raise ValueError(f"seeds must be >= 0, got {min((cfg.seed, *cfg.seeds, *cfg.tune_seeds))}")
    if set(cfg.seeds) & set(cfg.tune_seeds):
        raise ValueError(
            f"tune_seeds must be disjoint from seeds (a validation split), both have "
            f"{sorted(set(cfg.seeds) & set(cfg.tune_seeds))}"
        )
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
    for problem in () if user else (cfg.problem, *cfg.problems):
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
