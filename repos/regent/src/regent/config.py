"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`regent train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

from .envs import FAMILIES, REGIMES
from .retrieval import NORMALISERS


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for tasks, demonstrations, initialisation and evaluation."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """Torch device for pretraining (cpu, cuda, ...); evaluation runs on the CPU."""
    threads: int = 1
    """CPU threads of torch and faiss."""
    out: str = "runs/quick"
    """Folder for config.json, metrics.json and the safetensors checkpoints."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    resume: bool = False
    """Reuse pretrained checkpoints found in --out instead of training again."""
    families: tuple[str, ...] = FAMILIES
    """Task families: point (continuous reach) and grid (discrete navigation)."""
    regime: str = "hard"
    """Task-family settings (envs.REGIMES): easy (short horizons) or hard (2-3x longer)."""
    n_train_tasks: int = 12
    """Pretraining tasks per family (24 in all)."""
    n_test_tasks: int = 3
    """Held-out tasks per family (6 in all)."""
    train_demos: int = 40
    """Demonstration episodes per pretraining task."""
    demo_noise: float = 0.3
    """Expert noise: Gaussian action std (point) or epsilon of random actions (grid)."""
    n_retrieved: int = 19
    """Retrieved demonstration states in REGENT's context (the paper's 19, 20 states in all)."""
    normaliser: str = "nn1"
    """p95 distance normaliser: nn1 (1-NN distances, ours) or context (all n, the official)."""
    action_vocab: int = 0
    """Discrete action vocabulary of the model and q_RP's uniform term; 0: the environment's 4
    actions; 18: the official (Atari's full set; actions 4-17 are never taken)."""
    lam: float = 10.0
    """lambda of the interpolation weight exp(-lambda d)."""
    cont_scale: float = 10.0
    """L, the scale of the network's clamped continuous output in the interpolation."""
    d_model: int = 64
    """Transformer width."""
    n_layers: int = 2
    """Transformer layers."""
    n_heads: int = 4
    """Attention heads."""
    steps: int = 400
    """Pretraining steps of each REGENT model."""
    batch_size: int = 48
    """Pretraining batch size (contexts)."""
    lr: float = 1e-3
    """AdamW learning rate for pretraining."""
    bc_steps: int = 300
    """Steps of behaviour cloning from scratch on a held-out task's demonstrations."""
    mtbc_steps: int = 1500
    """Steps of multi-task behaviour cloning on all pretraining tasks."""
    demo_counts: tuple[int, ...] = (1, 2, 5, 10, 20)
    """Demonstration episodes given on each held-out task."""
    eval_episodes: int = 50
    """Evaluation episodes per held-out task and demonstration count (the same start states for
    every method and count: the claims use paired differences)."""
    ablation_sizes: tuple[int, ...] = (1, 2, 4, 9, 19)
    """Retrieved states n in the context-size ablation (context = n + 1 states)."""
    ablation_demos: int = 20
    """Demonstration episodes used in the context-size ablation."""
    metaworld: bool = False
    """Also run Meta-World (needs the `metaworld` extra): pretrain on scripted demonstrations of
    --mw-train-tasks MT50 tasks, evaluate on the paper's 5 held-out tasks (the paper preset)."""
    mw_train_tasks: int = 15
    """Meta-World pretraining tasks, evenly spaced in name order among the 45 not held out."""
    mw_train_demos: int = 10
    """Scripted demonstration episodes per Meta-World pretraining task."""
    mw_demo_counts: tuple[int, ...] = (5, 25)
    """Demonstration episodes given on each held-out Meta-World task."""
    mw_eval_episodes: int = 20
    """Paired evaluation episodes per held-out Meta-World task and demonstration count."""
    mw_horizon: int = 150
    """Meta-World episode length (the scripted policies succeed within 25-150 steps)."""
    demo_noise_mw: float = 0.1
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
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="cuda",
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
        mw_eval_episodes=50,
        mw_horizon=500,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    positive = (
        "n_train_tasks",
        "n_test_tasks",
        "train_demos",
        "n_retrieved",
        "d_model",
        "n_layers",
        "n_heads",
        "steps",
        "batch_size",
        "bc_steps",
        "mtbc_steps",
        "eval_episodes",
        "threads",
        "ablation_demos",
        "mw_train_tasks",
        "mw_train_demos",
        "mw_eval_episodes",
        "mw_horizon",
    )
    for field in positive:
        if getattr(cfg, field) < 1:
            raise ValueError(f"{field} must be >= 1, got {getattr(cfg, field)}")
    if cfg.train_demos < 2:
        raise ValueError(
            f"train_demos must be >= 2 (retrieval excludes the query's own episode), got {cfg.train_demos}"
        )
    if cfg.lr <= 0 or cfg.lam < 0 or cfg.cont_scale <= 0:
        raise ValueError(
            f"need lr > 0, lam >= 0, cont_scale > 0; got {cfg.lr}, {cfg.lam}, {cfg.cont_scale}"
        )
    if cfg.d_model % cfg.n_heads:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_heads ({cfg.n_heads})")
    bad = [f for f in cfg.families if f not in FAMILIES]
    if bad or not cfg.families:
        raise ValueError(f"families must be a non-empty subset of {FAMILIES}, got {cfg.families}")
    if not cfg.demo_counts or min(cfg.demo_counts) < 1:
        raise ValueError(f"demo_counts must be positive integers, got {cfg.demo_counts}")
    if (
        not cfg.ablation_sizes
        or min(cfg.ablation_sizes) < 1
        or max(cfg.ablation_sizes) > cfg.n_retrieved
    ):
        raise ValueError(
            f"ablation_sizes must lie in 1..n_retrieved={cfg.n_retrieved}, got {cfg.ablation_sizes}"
        )
    if cfg.ablation_demos not in cfg.demo_counts:
        raise ValueError(
            f"ablation_demos ({cfg.ablation_demos}) must be one of demo_counts {cfg.demo_counts} "
            "(R&P at that count is the ablation's negative control)"
        )
    if not 0 <= cfg.demo_noise <= 1:
        raise ValueError(f"demo_noise must be in [0, 1], got {cfg.demo_noise}")
    if cfg.regime not in REGIMES:
        raise ValueError(f"regime must be one of {sorted(REGIMES)}, got {cfg.regime!r}")
    if cfg.normaliser not in NORMALISERS:
        raise ValueError(f"normaliser must be one of {NORMALISERS}, got {cfg.normaliser!r}")
    if cfg.action_vocab and cfg.action_vocab < 4:
        raise ValueError(
            f"action_vocab must be 0 or >= 4 (GridNav's actions), got {cfg.action_vocab}"
        )
    if not cfg.mw_demo_counts or min(cfg.mw_demo_counts) < 1:
        raise ValueError(f"mw_demo_counts must be positive integers, got {cfg.mw_demo_counts}")
    if cfg.mw_train_demos < 2:
        raise ValueError(
            f"mw_train_demos must be >= 2 (retrieval excludes the query's own episode), "
            f"got {cfg.mw_train_demos}"
        )
    if cfg.mw_train_tasks > 45:
        raise ValueError(
            f"mw_train_tasks must be at most 45 (MT50 minus 5 held out), got {cfg.mw_train_tasks}"
        )
    if not 0 <= cfg.demo_noise_mw <= 1:
        raise ValueError(f"demo_noise_mw must be in [0, 1], got {cfg.demo_noise_mw}")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    return cfg
