"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`arith-heuristics train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from .runtime import Annotated, Ge, Gt, Interval, MinLen, RunConfig, check_bounds

OPERATORS = ("+", "-", "*", "/")
"""The four operators of the paper; '/' is integer division."""


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    resume: bool = False
    """Reuse the final checkpoint in --out instead of training again."""
    checkpoint: str = ""
    """Optional local Hugging Face causal-LM folder to analyse instead of training a toy model."""
    max_operand: Annotated[int, Ge(2)] = 40
    """Operands are drawn from [0, max_operand) (paper: 300)."""
    n_numbers: Annotated[int, Ge(3)] = 80
    """Number tokens 0..n_numbers-1; a result must be one of them (single-token rule)."""
    train_frac: Annotated[float, Interval(gt=0, le=1)] = 0.8
    """Share of the legal prompts the model is trained on."""
    zipf_a: Annotated[float, Ge(0)] = 0.3
    """Exponent of the Zipf-like skew over operand size in the training sampler (0: uniform)."""
    n_layer: Annotated[int, Ge(1)] = 3
    """Transformer layers of the GPT-2 model built from a config."""
    d_model: Annotated[int, Ge(1)] = 64
    """Hidden size."""
    n_head: Annotated[int, Ge(1)] = 4
    """Attention heads per layer."""
    d_mlp: Annotated[int, Ge(1)] = 256
    """MLP neurons per layer."""
    steps: Annotated[int, Ge(1)] = 2500
    """Training steps (AdamW)."""
    batch: Annotated[int, Ge(1)] = 128
    """Training batch size (prompts)."""
    lr: Annotated[float, Gt(0)] = 5e-3
    """Peak learning rate (linear warm-up, cosine decay)."""
    weight_decay: Annotated[float, Ge(0)] = 0.1
    """AdamW weight decay."""
    n_checkpoints: Annotated[int, Ge(1)] = 8
    """Checkpoints saved evenly over training (the last one is the final model)."""
    first_heuristics_layer: Annotated[int, Ge(0)] = 1
    """Neuron analysis covers MLP layers from this one on (paper: 16 of 32 for Llama3-8B)."""
    n_prompts: Annotated[int, Ge(1)] = 100
    """Correct prompts per operator used for patching and faithfulness."""
    top_frac: Annotated[float, Interval(gt=0, le=1)] = 0.1
    """Share of each late MLP layer's neurons kept as the top neurons (paper: 200/14336)."""
    faith_fracs: Annotated[tuple[float, ...], MinLen(1), Interval(gt=0, le=1)] = (
        0.01,
        0.015,
        0.02,
        0.05,
        0.1,
        0.2,
        0.5,
    )
    """Kept shares of late-layer neurons at which faithfulness is measured."""
    head_faith_target: Annotated[float, Interval(gt=0, le=1)] = 0.9
    """Heads enter the circuit in order of E until the circuit (heads + all MLPs) reaches this
    faithfulness on a validation prompt set (the faithfulness-vs-number-of-heads sweep)."""
    max_kept_frac: Annotated[float, Interval(gt=0, le=1)] = 0.1
    """The sparse-faithfulness claim uses the best kept share of late-layer neurons up to this."""
    paper_frac: Annotated[float, Interval(gt=0, le=1)] = 0.015
    """The paper's neuron budget as a kept share of each late layer (200 of 14,336 in Llama3-8B,
    "about 1.5%"); the faithful-at-paper-budget claim reads F there (a point of faith_fracs)."""
    threshold: Annotated[float, Interval(gt=0, le=1)] = 0.6
    """Algorithm 1's score threshold t for 'neuron implements heuristic'."""
    max_heuristic_share: Annotated[float, Interval(gt=0, le=1)] = 0.5
    """Heuristics matching more than this share of legal prompts are skipped (trivially matched)."""
    min_heuristic_neurons: Annotated[int, Ge(1)] = 3
    """Knockouts use heuristics implemented by at least this many neurons (paper code: 10)."""
    knockout_prompts: Annotated[int, Ge(1)] = 100
    """Associated and unassociated correct prompts per heuristic knockout (paper: 100 each)."""
    knockout_counts: Annotated[tuple[int, ...], MinLen(1), Ge(1)] = (5, 10, 20, 40)
    """Neurons ablated per layer in the prompt-level knockout."""
    probe_epochs: Annotated[int, Ge(1)] = 8
    """Epochs of each linear probe (Adam, lr 3e-4, batch 32, 80/20 split)."""
    probe_prompts: Annotated[int, Ge(10)] = 2000
    """Prompts the probes are trained and tested on."""
    perf_prompts: Annotated[int, Ge(1)] = 100
    """Prompts timed for exact neuron patching vs attribution patching in the benchmark."""
    untrained_null: bool = True
    """Also classify the top and bottom neurons of the untrained initial model (a null)."""
    n_boot: Annotated[int, Ge(100)] = 2000
    """Bootstrap resamples for the paired intervals of the claims (over seeds x operators)."""
    sizes: tuple[str, ...] = ()
    """bench: extra model sizes 'LAYERSxWIDTH' (e.g. 2x64 6x192; d_mlp = 4 x width, analysis
    from layer LAYERS // 2) trained over the same seeds beside the preset's model; every claim
    gets a per-size reading (opt-in: the paper-sizes preset, cost in the README)."""


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
        device="auto",
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


# the paper preset plus two more model sizes, each over the same seeds (issue 64 point 2); opt-in:
# well over the paper preset's 45-minute budget (measured cost in the README)
PRESETS["paper-sizes"] = dataclasses.replace(
    PRESETS["paper"], name="paper-sizes", out="runs/paper-sizes", sizes=("2x64", "6x192")
)

SIZE = re.compile(r"^([1-9][0-9]*)x([1-9][0-9]*)$")


def parse_size(text: str) -> tuple[int, int]:
    """'LAYERSxWIDTH' -> (layers, width); ValueError naming the value otherwise."""
    m = SIZE.match(text)
    if m is None:
        raise ValueError(f"sizes: {text!r} is not LAYERSxWIDTH (e.g. 2x64)")
    return int(m.group(1)), int(m.group(2))


def at_size(cfg: Config, text: str) -> Config:
    """The configuration of one extra model size: n_layer x d_model, d_mlp = 4 d_model, the
    neuron analysis from layer n_layer // 2 on (as both presets), its runs under out/size-<text>."""
    n_layer, width = parse_size(text)
    return dataclasses.replace(
        cfg,
        n_layer=n_layer,
        d_model=width,
        d_mlp=4 * width,
        first_heuristics_layer=n_layer // 2,
        out=str(Path(cfg.out) / f"size-{text}"),
        sizes=(),
    )


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged.
    Single-field bounds stand beside the fields (check_bounds); the checks here involve several
    fields or the file system."""
    check_bounds(cfg)
    if 2 * (cfg.max_operand - 1) >= cfg.n_numbers:
        raise ValueError(
            f"operands in [0, {cfg.max_operand}) give sums up to {2 * (cfg.max_operand - 1)}, "
            f"outside the vocabulary of {cfg.n_numbers} number tokens; raise n_numbers above "
            f"{2 * (cfg.max_operand - 1)} or lower max_operand"
        )
    if cfg.d_model % cfg.n_head:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_head ({cfg.n_head})")
    if not cfg.first_heuristics_layer < cfg.n_layer and not cfg.checkpoint:
        raise ValueError(
            f"first_heuristics_layer must be in [0, {cfg.n_layer}), got {cfg.first_heuristics_layer}"
        )
    if not any(abs(f - cfg.paper_frac) < 1e-9 for f in cfg.faith_fracs):
        raise ValueError(
            f"faith_fracs {list(cfg.faith_fracs)} must include paper_frac ({cfg.paper_frac}): "
            "the faithful-at-paper-budget claim reads faithfulness there"
        )
    for text in cfg.sizes:
        if cfg.checkpoint:
            raise ValueError(
                "sizes: extra model sizes are trained; they cannot go with --checkpoint"
            )
        width = parse_size(text)[1]
        if width % cfg.n_head:
            raise ValueError(
                f"sizes: width {width} of {text!r} must be divisible by n_head ({cfg.n_head})"
            )
    if len(set(cfg.sizes)) != len(cfg.sizes):
        raise ValueError(f"sizes: each size once, got {list(cfg.sizes)}")
    if cfg.checkpoint and not Path(cfg.checkpoint).is_dir():
        raise ValueError(f"checkpoint must be a local model folder; {cfg.checkpoint!r} not found")
    return cfg
