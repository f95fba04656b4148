"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`regent train --help`); the run fields (name, seed, seeds,
device, out, results_dir, quiet) come from runtime.RunConfig. Single-field bounds stand beside
their fields; `validate` adds the checks that involve several fields or a set of names. Presets
are plain instances; a command-line flag overrides the preset's value. Nothing is derived in
`__post_init__`. Pretraining runs on --device; evaluation runs on the CPU.
"""

from __future__ import annotations

import dataclasses

from .envs import FAMILIES, REGIMES
from .retrieval import NORMALISERS
from .runtime import Annotated, Ge, Gt, Interval, MinLen, RunConfig, check_bounds

Positive = Annotated[int, Ge(1)]
Counts = Annotated[tuple[int, ...], MinLen(1), Ge(1)]
Fraction = Annotated[float, Interval(ge=0, le=1)]


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    threads: Positive = 1
    """CPU threads of torch and faiss."""
    resume: bool = False
    """Reuse pretrained checkpoints found in --out instead of training again."""
    families: Annotated[tuple[str, ...], MinLen(1)] = FAMILIES
    """Task families: point (continuous reach) and grid (discrete navigation)."""
    regime: str = "hard"
    """Task-family settings (envs.REGIMES): easy (short horizons) or hard (2-3x longer)."""
    n_train_tasks: Positive = 12
    """Pretraining tasks per family (24 in all)."""
    n_test_tasks: Positive = 3
    """Held-out tasks per family (6 in all)."""
    train_demos: Annotated[int, Ge(2)] = 40
    """Demonstration episodes per pretraining task (>= 2: retrieval excludes the query's own
    episode)."""
    demo_noise: Fraction = 0.3
    """Expert noise: Gaussian action std (point) or epsilon of random actions (grid)."""
    n_retrieved: Positive = 19
    """Retrieved demonstration states in REGENT's context (the paper's 19, 20 states in all)."""
    normaliser: str = "nn1"
    """p95 distance normaliser: nn1 (1-NN distances, ours) or context (the official: distances of
    every context state and of the query to the first retrieved state, zeros included)."""
    action_vocab: Annotated[int, Ge(0)] = 0
    """Discrete action vocabulary of the model and q_RP's uniform term; 0: the environment's 4
    actions; 18: the official (Atari's full set; actions 4-17 are never taken)."""
    lam: Annotated[float, Ge(0)] = 10.0
    """lambda of the interpolation weight exp(-lambda d)."""
    cont_scale: Annotated[float, Gt(0)] = 10.0
    """L, the scale of the network's clamped continuous output in the interpolation."""
    d_model: Positive = 64
    """Transformer width."""
    n_layers: Positive = 2
    """Transformer layers."""
    n_heads: Positive = 4
    """Attention heads."""
    steps: Positive = 400
    """Pretraining steps of each REGENT model."""
    batch_size: Positive = 48
    """Pretraining batch size (contexts)."""
    lr: Annotated[float, Gt(0)] = 1e-3
    """AdamW learning rate for pretraining."""
    bc_steps: Positive = 300
    """Steps of behaviour cloning from scratch on a held-out task's demonstrations."""
    mtbc_steps: Positive = 1500
    """Steps of multi-task behaviour cloning on all pretraining tasks."""
    demo_counts: Counts = (1, 2, 5, 10, 20)
    """Demonstration episodes given on each held-out task."""
    eval_episodes: Positive = 50
    """Evaluation episodes per held-out task and demonstration count (the same start states for
    every method and count: the claims use paired differences)."""
    ablation_sizes: Counts = (1, 2, 4, 9, 19)
    """Retrieved states n in the context-size ablation (context = n + 1 states)."""
    ablation_demos: Positive = 20
    """Demonstration episodes used in the context-size ablation."""
    metaworld: bool = False
    """Also run Meta-World (needs the `metaworld` extra): pretrain on scripted demonstrations of
    --mw-train-tasks MT50 tasks, evaluate on the paper's 5 held-out tasks (the paper preset)."""
    mw_train_tasks: Annotated[int, Interval(ge=1, le=45)] = 15
    """Meta-World pretraining tasks, evenly spaced in name order among the 45 not held out."""
    mw_train_demos: Annotated[int, Ge(2)] = 10
    """Scripted demonstration episodes per Meta-World pretraining task (>= 2, as train_demos)."""
    mw_demo_counts: Counts = (5, 25)
    """Demonstration episodes given on each held-out Meta-World task."""
    mw_rp_demo_counts: Annotated[tuple[int, ...], Ge(1)] = ()
    """Extra demonstration counts at which only R&P (no training) is scored on the held-out
    Meta-World tasks: the paper's R&P row (25-100 demos), the cleanest check of the setup."""
    mw_eval_episodes: Positive = 20
    """Paired evaluation episodes per held-out Meta-World task and demonstration count."""
    mw_horizon: Positive = 150
    """Meta-World episode length (the scripted policies succeed within 25-150 steps)."""
    demo_noise_mw: Fraction = 0.1
    """Gaussian action noise (std) added to the scripted Meta-World demonstrators."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "paper": Config(
        name="paper",
        out="runs/paper",
        n_train_tasks=24,
        n_test_tasks=5,
        train_demos=50,
        steps=1500,
        batch_size=64,
        bc_steps=500,
        mtbc_steps=3000,
        metaworld=True,
        mw_rp_demo_counts=(25, 50, 100),
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
        n_train_tasks=45,
        n_test_tasks=5,
        train_demos=100,
        d_model=256,
        n_layers=6,
        n_heads=8,
        steps=30_000,
        batch_size=256,
        lr=3e-4,
        bc_steps=2000,
        mtbc_steps=20_000,
        eval_episodes=50,
        demo_counts=(1, 2, 5, 10, 20, 50, 100),
        ablation_demos=100,
        metaworld=True,
        mw_train_tasks=45,
        mw_train_demos=100,
        mw_demo_counts=(25, 50, 100),
        mw_rp_demo_counts=(25, 50, 100),
        mw_eval_episodes=50,
        mw_horizon=500,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    if cfg.d_model % cfg.n_heads:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_heads ({cfg.n_heads})")
    bad = [f for f in cfg.families if f not in FAMILIES]
    if bad:
        raise ValueError(f"families must be a non-empty subset of {FAMILIES}, got {cfg.families}")
    if max(cfg.ablation_sizes) > cfg.n_retrieved:
        raise ValueError(
            f"ablation_sizes must lie in 1..n_retrieved={cfg.n_retrieved}, got {cfg.ablation_sizes}"
        )
    if cfg.ablation_demos not in cfg.demo_counts:
        raise ValueError(
            f"ablation_demos ({cfg.ablation_demos}) must be one of demo_counts {cfg.demo_counts} "
            "(R&P at that count is the ablation's negative control)"
        )
    if cfg.regime not in REGIMES:
        raise ValueError(f"regime must be one of {sorted(REGIMES)}, got {cfg.regime!r}")
    if cfg.normaliser not in NORMALISERS:
        raise ValueError(f"normaliser must be one of {NORMALISERS}, got {cfg.normaliser!r}")
    if cfg.action_vocab and cfg.action_vocab < 4:
        raise ValueError(
            f"action_vocab must be 0 or >= 4 (GridNav's actions), got {cfg.action_vocab}"
        )
    return cfg
