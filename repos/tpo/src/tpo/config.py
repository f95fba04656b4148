"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`tpo train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

METHODS = ("sft", "dpo", "dpo_all", "tpo_plr", "tpo")
"""SFT policy; DPO gold-vs-worst; DPO on every tree pair; TPO ranking only; TPO ranking + ASR."""


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    method: str = "tpo"
    """Method `train` runs: sft, dpo, dpo_all, tpo_plr (ranking only) or tpo (ranking + ASR)."""
    seed: int = 0
    """Random seed for data, initialisation and sampling."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """Torch device (cpu, cuda, cuda:1, ...)."""
    out: str = "runs/quick"
    """Folder for config.json, metrics.json and safetensors checkpoints."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    threads: int = 1
    """CPU threads for torch (one is fastest on a shared 2-core machine)."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    resume: bool = False
    """Reuse the SFT checkpoint in --out instead of training it again."""
    trees: str = ""
    """Optional JSONL file of your own preference trees (replaces the generated training trees)."""
    modulus: int = 5
    """Arithmetic is mod this number; every number is one token."""
    min_steps: int = 3
    """Fewest steps of an in-distribution chain."""
    max_steps: int = 5
    """Most steps of an in-distribution chain (out of distribution: max_steps+1 .. max_steps+2)."""
    n_layer: int = 2
    """Transformer layers of the GPT-2 policy built from a config."""
    d_model: int = 64
    """Hidden size of the policy."""
    n_head: int = 4
    """Attention heads of the policy."""
    sft_examples: int = 4000
    """Generated SFT solutions."""
    sft_corrupt: float = 0.3
    """Share of SFT solutions with one wrong step that propagates (so the policy errs)."""
    sft_steps: int = 1500
    """SFT optimiser steps."""
    sft_batch: int = 32
    """SFT batch size (sequences)."""
    sft_lr: float = 3e-3
    """SFT learning rate (AdamW)."""
    n_trees: int = 300
    """Preference trees built for training."""
    n_heldout_trees: int = 100
    """Held-out trees for ranking quality and sibling margins."""
    n_branches: int = 3
    """Branches sampled from the SFT policy after a random gold prefix (data_prepare.py: 3)."""
    temperature: float = 1.0
    """Sampling temperature of the branches."""
    pref_steps: int = 60
    """Preference-optimisation steps."""
    pref_batch: int = 8
    """Trees per preference step."""
    pref_lr: float = 1e-4
    """Preference-optimisation learning rate (AdamW, weight decay 0.01)."""
    beta: float = 0.5
    """Implicit-reward temperature beta (paper default 0.5)."""
    asr_direction: str = "paper"
    """ASR weights: 'paper' (fall with step similarity) or 'code' (1 + cos, as the official loss.py)."""
    n_eval: int = 200
    """Test problems per split (in and out of distribution) for greedy accuracy."""
    perf_repeats: int = 20
    """Timed repetitions of the loss-and-backward comparison with trl in `bench` (0 skips it)."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "full": Config(
        name="full",
        out="runs/full",
        device="cuda",
        modulus=100,
        n_layer=6,
        d_model=256,
        n_head=8,
        sft_examples=200_000,
        sft_steps=20_000,
        sft_batch=256,
        sft_lr=1e-3,
        n_trees=10_000,
        n_heldout_trees=1_000,
        n_branches=8,
        pref_steps=2_000,
        pref_batch=32,
        pref_lr=2e-5,
        n_eval=2_000,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    if cfg.method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {cfg.method!r}")
    if cfg.asr_direction not in ("paper", "code"):
        raise ValueError(f"asr_direction must be 'paper' or 'code', got {cfg.asr_direction!r}")
    if not 2 <= cfg.modulus <= 1000:
        raise ValueError(f"modulus must be in [2, 1000], got {cfg.modulus}")
    if not 1 <= cfg.min_steps <= cfg.max_steps:
        raise ValueError(f"need 1 <= min_steps <= max_steps, got {cfg.min_steps}, {cfg.max_steps}")
    for field in ("sft_steps", "pref_steps", "sft_batch", "pref_batch", "n_trees", "n_eval"):
        if getattr(cfg, field) < 1:
            raise ValueError(f"{field} must be >= 1, got {getattr(cfg, field)}")
    if cfg.n_heldout_trees < 1 or cfg.n_branches < 1:
        raise ValueError("n_heldout_trees and n_branches must be >= 1")
    if cfg.beta <= 0 or cfg.sft_lr <= 0 or cfg.pref_lr <= 0 or cfg.temperature <= 0:
        raise ValueError("beta, sft_lr, pref_lr and temperature must be > 0")
    if not 0 <= cfg.sft_corrupt < 1:
        raise ValueError(f"sft_corrupt must be in [0, 1), got {cfg.sft_corrupt}")
    if cfg.d_model % cfg.n_head:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_head ({cfg.n_head})")
    if cfg.trees and not Path(cfg.trees).is_file():
        raise ValueError(f"trees must be a JSONL file of preference trees; {cfg.trees!r} not found")
    if cfg.perf_repeats < 0:
        raise ValueError(f"perf_repeats must be >= 0, got {cfg.perf_repeats}")
    if cfg.threads < 1:
        raise ValueError(f"threads must be >= 1, got {cfg.threads}")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    return cfg
