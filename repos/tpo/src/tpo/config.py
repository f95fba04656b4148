"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`tpo train --help`); the run fields (name, seed, seeds,
device, out, results_dir, quiet) come from runtime.RunConfig. Single-field bounds stand beside
their fields; `validate` adds the checks that involve several fields, a set of names or a file.
Presets are plain instances; a command-line flag overrides the preset's value. Nothing is
derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from .runtime import Annotated, Ge, Gt, Interval, RunConfig, check_bounds

Positive = Annotated[int, Ge(1)]

METHODS = ("sft", "dpo", "dpo_all", "tpo_plr", "tpo", "tpo_code", "tpo_anchor", "tpo_shuffled")
"""SFT policy; DPO gold-vs-worst; DPO on every tree pair; TPO ranking only (PLR); TPO = PLR + ASR
(paper form, pairwise); ablations with the official loss.py ASR (1 + cos against response 0) and
our first-pass ASR (against the best response); negative control: TPO on scores shuffled within
each tree."""

STEP_MERGES = ("none", "official")
DPO_REWARDS = ("sum", "mean")


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    method: str = "tpo"
    """Method `train` runs: one of METHODS (sft, dpo, dpo_all, tpo_plr, tpo, tpo_code, tpo_anchor,
    tpo_shuffled)."""
    methods: tuple[str, ...] = METHODS
    """Methods the benchmark runs (sft, dpo, tpo_plr, tpo and tpo_shuffled are always needed)."""
    resume: bool = False
    """Reuse the SFT checkpoint in --out instead of training it again."""
    trees: str = ""
    """Optional JSONL file of your own preference trees (replaces the generated training trees)."""
    model_dir: str = ""
    """Local transformers causal-LM folder: `train` fine-tunes it with LoRA on --trees (the
    paper's setting) instead of the arithmetic task's GPT-2."""
    demo: str = ""
    """Write a tiny random Llama and official-format trees into this folder and use them as
    --model-dir and --trees (a smoke test of the paper's setting; nothing is downloaded)."""
    step_pattern: str = r"Step \d+:"
    """Regular expression that opens a step in --model-dir responses (official data: 'Step k:')."""
    lora_r: Positive = 8
    """LoRA rank (tpo_train.py: 8)."""
    lora_alpha: Annotated[int, Gt(0)] = 16
    """LoRA alpha (tpo_train.py: 16)."""
    lora_dropout: Annotated[float, Interval(ge=0, lt=1)] = 0.1
    """LoRA dropout (tpo_train.py: 0.1)."""
    modulus: Annotated[int, Interval(ge=2, le=1000)] = 5
    """Arithmetic is mod this number; every number is one token."""
    min_steps: Positive = 3
    """Fewest steps of an in-distribution chain."""
    max_steps: Positive = 5
    """Most steps of an in-distribution chain (out of distribution: max_steps+1 .. max_steps+2)."""
    n_layer: Positive = 2
    """Transformer layers of the GPT-2 policy built from a config."""
    d_model: Positive = 64
    """Hidden size of the policy."""
    n_head: Positive = 4
    """Attention heads of the policy."""
    sft_examples: Positive = 4000
    """Generated SFT solutions."""
    sft_corrupt: Annotated[float, Interval(ge=0, lt=1)] = 0.3
    """Share of SFT solutions with one wrong step that propagates (so the policy errs)."""
    sft_slip: Annotated[float, Interval(ge=0, le=1)] = 0.0
    """Share of SFT solutions carrying a systematic slip: every step 'v * b' with 2b > modulus
    writes v (the multiplication skipped), the error propagating. Above 0.5 the slip is the SFT
    policy's greedy choice on those steps, so SFT stays below the ceiling however well it trains
    (issue 76: the headroom precondition); preference data scored by the judge can correct it."""
    sft_steps: Positive = 1500
    """SFT optimiser steps."""
    sft_batch: Positive = 32
    """SFT batch size (sequences)."""
    sft_lr: Annotated[float, Gt(0)] = 3e-3
    """SFT learning rate (AdamW)."""
    n_trees: Positive = 300
    """Preference trees built for training."""
    n_heldout_trees: Positive = 100
    """Held-out trees for ranking quality and sibling margins."""
    n_branches: Positive = 3
    """Branches sampled from the SFT policy after a random gold prefix (data_prepare.py: 3)."""
    temperature: Annotated[float, Gt(0)] = 1.0
    """Sampling temperature of the branches."""
    pref_steps: Positive = 120
    """Preference-optimisation steps."""
    pref_batch: Positive = 8
    """Trees per preference step."""
    pref_lr: Annotated[float, Gt(0)] = 1e-4
    """Preference-optimisation learning rate (AdamW, weight decay 0.01)."""
    beta: Annotated[float, Gt(0)] = 0.5
    """Implicit-reward temperature beta (paper default 0.5); used when beta_grid is empty."""
    beta_grid: Annotated[tuple[float, ...], Gt(0)] = ()
    """Betas every preference method is tuned over (first seed, validation accuracy); empty: none."""
    n_val: Positive = 200
    """Validation problems (in distribution) for the beta tuning."""
    n_eval: Positive = 300
    """Test problems per split (in and out of distribution) for greedy accuracy."""
    curve_every: Annotated[int, Ge(0)] = 0
    """Record validation accuracy every this many preference steps on the first seed (0: off)."""
    n_boot: Positive = 2000
    """Bootstrap resamples for the paired intervals of the claims."""
    perf_repeats: Annotated[int, Ge(0)] = 20
    """Timed repetitions of the loss-and-backward comparison with trl in `bench` (0 skips it)."""
    step_merge: str = "none"
    """Step alignment of a list for ASR: 'none' (each response keeps all its steps) or 'official'
    (dataset.py: steps past the list's smallest step count merge into that last step)."""
    dpo_reward: str = "sum"
    """DPO baselines' implicit reward: 'sum' of log-ratios (DPO paper) or 'mean' over response
    tokens (the official loss.py's masked mean, length-normalised)."""


# issue 76: without the systematic slip the SFT policy reaches 0.990 on one machine and 0.677 on
# another (it sits on a learning transition at 1,500 steps); with 60% slipped SFT solutions the
# quick run measured SFT at 0.751 [0.693, 0.809] (3 seeds), so the headroom precondition holds
# and the preference methods have something to correct. The arithmetic presets all carry it.
SLIP = 0.6

PRESETS: dict[str, Config] = {
    "quick": Config(sft_slip=SLIP),
    # the smallest CPU scale where the methods separate (issue 44: >= 300 preference steps,
    # >= 600 test problems per split, 3 seeds); every method tuned over the same beta grid
    "paper": Config(
        name="paper",
        out="runs/paper",
        # issue 76: 3 seeds left the main claim's per-seed t interval at [-0.013, +0.064]
        # (seeds_needed 7); 8 paired seeds decide it at the 3-seed spread
        seeds=tuple(range(8)),
        sft_slip=SLIP,
        n_trees=1000,
        n_heldout_trees=200,
        pref_steps=300,
        beta_grid=(0.1, 0.5),
        n_val=300,
        curve_every=100,
        n_eval=600,
    ),
    # the paper's own setting: LoRA on a local causal LM (--model-dir) trained on preference trees
    # in the official JSONL format (--trees), tpo_train.py's hyper-parameters
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
        method="tpo",
        methods=("sft", "dpo", "tpo_plr", "tpo", "tpo_shuffled"),
        beta=0.5,
        pref_lr=5e-7,
        pref_batch=1,
        step_merge="official",
        dpo_reward="mean",
        perf_repeats=0,
    ),
    # the arithmetic task at the brief's full CPU-plan scale (GPU; the earlier `full`)
    "large": Config(
        name="large",
        out="runs/large",
        device="auto",
        modulus=100,
        sft_slip=SLIP,
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


def check_model_dir(path: str) -> None:
    if not (Path(path) / "config.json").is_file():
        raise ValueError(
            f"model_dir must be a local transformers model folder with config.json; got {path!r}"
        )


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
    check_bounds(cfg)
    if cfg.method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {cfg.method!r}")
    unknown = sorted(set(cfg.methods) - set(METHODS))
    if unknown:
        raise ValueError(f"methods must come from {METHODS}, got {unknown}")
    needed = {"sft", "dpo", "tpo_plr", "tpo", "tpo_shuffled"} - set(cfg.methods)
    if needed:
        raise ValueError(f"methods must include {sorted(needed)} (the claims compare them)")
    if cfg.step_merge not in STEP_MERGES:
        raise ValueError(f"step_merge must be one of {STEP_MERGES}, got {cfg.step_merge!r}")
    if cfg.dpo_reward not in DPO_REWARDS:
        raise ValueError(f"dpo_reward must be one of {DPO_REWARDS}, got {cfg.dpo_reward!r}")
    if cfg.name == "full" and not cfg.model_dir and not cfg.demo:
        raise ValueError(
            "the full preset is the paper's setting: give --model-dir DIR (a local causal LM "
            "folder) and --trees FILE (preference trees, JSONL); --preset large is the "
            "arithmetic task at scale"
        )
    if cfg.min_steps > cfg.max_steps:
        raise ValueError(f"need 1 <= min_steps <= max_steps, got {cfg.min_steps}, {cfg.max_steps}")
    if cfg.d_model % cfg.n_head:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_head ({cfg.n_head})")
    if cfg.demo and (cfg.model_dir or cfg.trees):
        raise ValueError("demo writes its own model and trees; drop --model-dir and --trees")
    if cfg.model_dir:
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
            ) from None
    elif cfg.trees:
        check_tree_file(cfg.trees, cfg.modulus)
    return cfg
