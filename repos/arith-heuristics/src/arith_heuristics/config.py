"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`arith-heuristics train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

OPERATORS = ("+", "-", "*", "/")
"""The four operators of the paper; '/' is integer division."""


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for the data split, initialisation, batches and the analysis samples."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over (one model trained and analysed per seed)."""
    device: str = "cpu"
    """Torch device (cpu, cuda, cuda:1, ...)."""
    out: str = "runs/quick"
    """Folder for config.json, metrics.json, analysis.json, heuristics.json and checkpoints."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    threads: int = 1
    """CPU threads for torch (one is fastest on a shared 2-core machine)."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    resume: bool = False
    """Reuse the final checkpoint in --out instead of training again."""
    checkpoint: str = ""
    """Optional local Hugging Face causal-LM folder to analyse instead of training a toy model."""
    max_operand: int = 40
    """Operands are drawn from [0, max_operand) (paper: 300)."""
    n_numbers: int = 80
    """Number tokens 0..n_numbers-1; a result must be one of them (single-token rule)."""
    train_frac: float = 0.8
    """Share of the legal prompts the model is trained on."""
    zipf_a: float = 0.3
    """Exponent of the Zipf-like skew over operand size in the training sampler (0: uniform)."""
    n_layer: int = 3
    """Transformer layers of the GPT-2 model built from a config."""
    d_model: int = 64
    """Hidden size."""
    n_head: int = 4
    """Attention heads per layer."""
    d_mlp: int = 256
    """MLP neurons per layer."""
    steps: int = 2500
    """Training steps (AdamW)."""
    batch: int = 128
    """Training batch size (prompts)."""
    lr: float = 5e-3
    """Peak learning rate (linear warm-up, cosine decay)."""
    weight_decay: float = 0.1
    """AdamW weight decay."""
    n_checkpoints: int = 8
    """Checkpoints saved evenly over training (the last one is the final model)."""
    first_heuristics_layer: int = 1
    """Neuron analysis covers MLP layers from this one on (paper: 16 of 32 for Llama3-8B)."""
    n_prompts: int = 100
    """Correct prompts per operator used for patching and faithfulness."""
    top_frac: float = 0.1
    """Share of each late MLP layer's neurons kept as the top neurons (paper: 200/14336)."""
    faith_fracs: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
    """Kept shares of late-layer neurons at which faithfulness is measured."""
    head_faith_target: float = 0.9
    """Heads enter the circuit in order of E until the circuit (heads + all MLPs) reaches this
    faithfulness on a validation prompt set (the faithfulness-vs-number-of-heads sweep)."""
    max_kept_frac: float = 0.1
    """The sparse-faithfulness claim uses the best kept share of late-layer neurons up to this."""
    threshold: float = 0.6
    """Algorithm 1's score threshold t for 'neuron implements heuristic'."""
    max_heuristic_share: float = 0.5
    """Heuristics matching more than this share of legal prompts are skipped (trivially matched)."""
    min_heuristic_neurons: int = 3
    """Knockouts use heuristics implemented by at least this many neurons (paper code: 10)."""
    knockout_prompts: int = 100
    """Associated and unassociated correct prompts per heuristic knockout (paper: 100 each)."""
    knockout_counts: tuple[int, ...] = (5, 10, 20, 40)
    """Neurons ablated per layer in the prompt-level knockout."""
    probe_epochs: int = 8
    """Epochs of each linear probe (Adam, lr 3e-4, batch 32, 80/20 split)."""
    probe_prompts: int = 2000
    """Prompts the probes are trained and tested on."""
    perf_prompts: int = 100
    """Prompts timed for exact neuron patching vs attribution patching in the benchmark."""
    untrained_null: bool = True
    """Also classify the top and bottom neurons of the untrained initial model (a null)."""
    n_boot: int = 2000
    """Bootstrap resamples for the paired intervals of the claims (over seeds x operators)."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # smallest CPU scale with the paper's neuron budget: operands in [0, 100), 4 layers twice
    # as wide as quick, ~1.5% of each late layer's 512 neurons (8) as its top neurons
    "paper": Config(
        name="paper",
        out="runs/paper",
        max_operand=100,
        n_numbers=200,
        n_layer=4,
        d_model=128,
        n_head=4,
        d_mlp=512,
        steps=5000,
        batch=128,
        lr=2e-3,
        first_heuristics_layer=2,
        top_frac=0.015,
        faith_fracs=(0.005, 0.01, 0.015, 0.02, 0.05, 0.1, 0.2, 0.5),
        min_heuristic_neurons=5,
        probe_prompts=4000,
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="cuda",
        max_operand=300,
        n_numbers=1000,
        n_layer=8,
        d_model=512,
        n_head=8,
        d_mlp=2048,
        steps=50_000,
        batch=512,
        lr=1e-3,
        first_heuristics_layer=4,
        top_frac=0.05,
        min_heuristic_neurons=10,
        probe_prompts=8000,
        probe_epochs=20,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    for field in ("steps", "batch", "n_layer", "d_model", "n_head", "d_mlp", "n_prompts"):
        if getattr(cfg, field) < 1:
            raise ValueError(f"{field} must be >= 1, got {getattr(cfg, field)}")
    if cfg.max_operand < 2:
        raise ValueError(f"max_operand must be >= 2, got {cfg.max_operand}")
    if 2 * (cfg.max_operand - 1) >= cfg.n_numbers:
        raise ValueError(
            f"operands in [0, {cfg.max_operand}) give sums up to {2 * (cfg.max_operand - 1)}, "
            f"outside the vocabulary of {cfg.n_numbers} number tokens; raise n_numbers above "
            f"{2 * (cfg.max_operand - 1)} or lower max_operand"
        )
    if cfg.d_model % cfg.n_head:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_head ({cfg.n_head})")
    if not 0 < cfg.train_frac <= 1:
        raise ValueError(f"train_frac must be in (0, 1], got {cfg.train_frac}")
    if not 0 <= cfg.first_heuristics_layer < cfg.n_layer and not cfg.checkpoint:
        raise ValueError(
            f"first_heuristics_layer must be in [0, {cfg.n_layer}), got {cfg.first_heuristics_layer}"
        )
    if not 0 < cfg.top_frac <= 1 or not all(0 < f <= 1 for f in cfg.faith_fracs):
        raise ValueError("top_frac and every faith_fracs entry must be in (0, 1]")
    if not 0 < cfg.max_kept_frac <= 1 or not 0 < cfg.head_faith_target <= 1:
        raise ValueError("max_kept_frac and head_faith_target must be in (0, 1]")
    if cfg.n_boot < 100:
        raise ValueError(f"n_boot must be >= 100, got {cfg.n_boot}")
    if not 0 < cfg.threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {cfg.threshold}")
    if cfg.n_checkpoints < 1:
        raise ValueError(f"n_checkpoints must be >= 1, got {cfg.n_checkpoints}")
    if cfg.checkpoint and not Path(cfg.checkpoint).is_dir():
        raise ValueError(f"checkpoint must be a local model folder; {cfg.checkpoint!r} not found")
    if cfg.threads < 1:
        raise ValueError(f"threads must be >= 1, got {cfg.threads}")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    if not cfg.knockout_counts or min(cfg.knockout_counts) < 1:
        raise ValueError("knockout_counts must be positive neuron counts")
    return cfg
