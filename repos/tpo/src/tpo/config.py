"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`tpo train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

METHODS = ("sft", "dpo", "dpo_all", "tpo_plr", "tpo", "tpo_code", "tpo_anchor", "tpo_shuffled")
"""SFT policy; DPO gold-vs-worst; DPO on every tree pair; TPO ranking only (PLR); TPO = PLR + ASR
(paper form, pairwise); ablations with the official loss.py ASR (1 + cos against response 0) and
our first-pass ASR (against the best response); negative control: TPO on scores shuffled within
each tree."""


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    method: str = "tpo"
    """Method `train` runs: one of METHODS (sft, dpo, dpo_all, tpo_plr, tpo, tpo_code, tpo_anchor,
    tpo_shuffled)."""
    methods: tuple[str, ...] = METHODS
    """Methods the benchmark runs (sft, dpo, tpo_plr, tpo and tpo_shuffled are always needed)."""
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
    model_dir: str = ""
    """Local transformers causal-LM folder: `train` fine-tunes it with LoRA on --trees (the
    paper's setting) instead of the arithmetic task's GPT-2."""
    step_pattern: str = r"Step \d+:"
    """Regular expression that opens a step in --model-dir responses (official data: 'Step k:')."""
    lora_r: int = 8
    """LoRA rank (tpo_train.py: 8)."""
    lora_alpha: int = 16
    """LoRA alpha (tpo_train.py: 16)."""
    lora_dropout: float = 0.1
    """LoRA dropout (tpo_train.py: 0.1)."""
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
    pref_steps: int = 120
    """Preference-optimisation steps."""
    pref_batch: int = 8
    """Trees per preference step."""
    pref_lr: float = 1e-4
    """Preference-optimisation learning rate (AdamW, weight decay 0.01)."""
    beta: float = 0.5
    """Implicit-reward temperature beta (paper default 0.5); used when beta_grid is empty."""
    beta_grid: tuple[float, ...] = ()
    """Betas every preference method is tuned over (first seed, validation accuracy); empty: none."""
    n_val: int = 200
    """Validation problems (in distribution) for the beta tuning."""
    n_eval: int = 300
    """Test problems per split (in and out of distribution) for greedy accuracy."""
    curve_every: int = 0
    """Record validation accuracy every this many preference steps on the first seed (0: off)."""
    n_boot: int = 2000
    """Bootstrap resamples for the paired intervals of the claims."""
    perf_repeats: int = 20
    """Timed repetitions of the loss-and-backward comparison with trl in `bench` (0 skips it)."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # the smallest CPU scale where the methods separate (issue 44: >= 300 preference steps,
    # >= 600 test problems per split, 3 seeds); every method tuned over the same beta grid
    "paper": Config(
        name="paper",
        out="runs/paper",
        n_trees=1000,
        n_heldout_trees=200,
        pref_steps=300,
        beta_grid=(0.1, 0.5),
        n_val=300,
        curve_every=100,
        n_eval=600,
    ),
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


def check_tree_file(path: str, modulus: int) -> None:
    """Read and check a --trees file before any training: format, scores, and that every token
    is in the task vocabulary (so a bad file fails in seconds, not after SFT)."""
    from .data import Tokenizer, load_trees

    if not Path(path).is_file():
        raise ValueError(f"trees must be a JSONL file of preference trees; {path!r} not found")
    tok = Tokenizer(modulus)
    for n, tree in enumerate(load_trees(path), start=1):
        for text in [tree.prompt, *tree.responses]:
            try:
                tok.encode(text)
            except ValueError as exc:
                raise ValueError(f"{path}: tree {n}: {exc}") from None


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    if cfg.method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {cfg.method!r}")
    unknown = sorted(set(cfg.methods) - set(METHODS))
    if unknown:
        raise ValueError(f"methods must come from {METHODS}, got {unknown}")
    needed = {"sft", "dpo", "tpo_plr", "tpo", "tpo_shuffled"} - set(cfg.methods)
    if needed:
        raise ValueError(f"methods must include {sorted(needed)} (the claims compare them)")
    if cfg.curve_every < 0:
        raise ValueError(f"curve_every must be >= 0, got {cfg.curve_every}")
    if any(b <= 0 for b in cfg.beta_grid):
        raise ValueError(f"beta_grid values must be > 0, got {cfg.beta_grid}")
    if not 2 <= cfg.modulus <= 1000:
        raise ValueError(f"modulus must be in [2, 1000], got {cfg.modulus}")
    if not 1 <= cfg.min_steps <= cfg.max_steps:
        raise ValueError(f"need 1 <= min_steps <= max_steps, got {cfg.min_steps}, {cfg.max_steps}")
    fields = ("sft_steps", "pref_steps", "sft_batch", "pref_batch", "n_trees", "n_eval", "n_val")
    for field in fields + ("n_boot",):
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
    if cfg.model_dir:
        from .hf import check_model_dir

        check_model_dir(cfg.model_dir)
        if not cfg.trees:
            raise ValueError("--model-dir needs --trees FILE (JSONL preference trees to train on)")
        if not Path(cfg.trees).is_file():
            raise ValueError(
                f"trees must be a JSONL file of preference trees; {cfg.trees!r} not found"
            )
        try:
            re.compile(cfg.step_pattern)
        except re.error as exc:
            raise ValueError(
                f"step_pattern {cfg.step_pattern!r} is not a regular expression ({exc})"
            )
        if cfg.lora_r < 1 or cfg.lora_alpha <= 0 or not 0 <= cfg.lora_dropout < 1:
            raise ValueError("need lora_r >= 1, lora_alpha > 0 and 0 <= lora_dropout < 1")
    elif cfg.trees:
        check_tree_file(cfg.trees, cfg.modulus)
    if cfg.perf_repeats < 0:
        raise ValueError(f"perf_repeats must be >= 0, got {cfg.perf_repeats}")
    if cfg.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"device {cfg.device!r} asked for, but torch sees no CUDA device")
    if cfg.threads < 1:
        raise ValueError(f"threads must be >= 1, got {cfg.threads}")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    return cfg
