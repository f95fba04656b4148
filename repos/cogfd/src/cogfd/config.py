"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`cogfd train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

from .runtime import Annotated, Ge, Gt, Interval, MinLen, RunConfig, check_bounds

METHODS = ("original", "cogfd", "cogfd_nograph", "cogfd_noerase", "esd_x", "ca", "uce", "naive")
"""Every model the benchmark evaluates; "original" is the pretrained model before erasure and
"cogfd_noerase" is the negative control (CoGFD's loss without its erase term exp(-L_e))."""


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    """`seed` seeds erasure and evaluation sampling; the base model always uses base_seed."""

    base_seed: Annotated[int, Ge(0)] = 0
    """Seed of the pretrained text-to-image model and of the oracle."""
    resume: bool = False
    """Reuse the base model checkpoint (base.safetensors) already in --out instead of pretraining."""
    methods: tuple[str, ...] = METHODS
    """Methods to run (subset of: original cogfd cogfd_nograph esd_x ca uce naive)."""
    image_size: Annotated[int, Ge(4)] = 8
    """Side of the rendered RGB images (the paper: SD v1.5 at 512 px, 64x64 latents)."""
    widths: Annotated[tuple[int, ...], MinLen(1), Ge(1)] = (16, 32)
    """UNet block_out_channels; cross-attention sits in the lowest-resolution block."""
    pretrain_steps: Annotated[int, Ge(1)] = 600
    """Steps of text-to-image pretraining from scratch (DDPM epsilon loss)."""
    pretrain_batch: Annotated[int, Ge(1)] = 32
    """Batch size of pretraining."""
    pretrain_lr: Annotated[float, Gt(0)] = 3e-3
    """AdamW learning rate of pretraining."""
    oracle_steps: Annotated[int, Ge(1)] = 1000
    """Training steps of the colour/shape judge (renders, nothing-images, SDEdit samples)."""
    base_checkpoint: str = ""
    """Local StableDiffusionPipeline folder (SD v1.4/1.5) that `train` erases with CoGFD and
    saves under --out/pipeline, instead of the procedural world."""
    clip_model: str = ""
    """Local CLIP folder (transformers CLIPModel + processor, e.g. openai/clip-vit-base-patch32)
    that scores the erased pipeline of --base-checkpoint on its forget and retain prompts."""
    fp16: bool = False
    """With --base-checkpoint: load the pipeline in float16 (CUDA only); the UNet trains in fp32."""
    gradient_checkpointing: bool = False
    """With --base-checkpoint: gradient checkpointing in the UNet during erasure."""
    combination: str = "red circle"
    """The concept combination X to erase."""
    theme: str = "red circle"
    """The theme Y handed to the graph builder."""
    graph_iterations: Annotated[int, Ge(1)] = 2
    """Iterative graph expansions (iterate_n; run.sh uses 2)."""
    graph_json: str = ""
    """Path to a concept logic graph JSON (official shape) to use instead of the ontology."""
    graph_llm: str = ""
    """Local transformers causal-LM folder that builds the graph (the official gpt-4o step)."""
    n_train_images: Annotated[int, Ge(1)] = 5
    """Images of the combination sampled from the original model for erasure (paper: 5)."""
    erase_steps: Annotated[int, Ge(1)] = 60
    """Fine-tuning steps of every erasure method (paper: 130 for CoGFD)."""
    erase_lr: Annotated[float, Gt(0)] = 2e-3
    """AdamW learning rate of every fine-tuning eraser (paper: 2.5e-5 on SD v1.5)."""
    erase_batch: Annotated[int, Ge(1)] = 20
    """Batch cap: CoGFD's batch is min(|E| + |R|, erase_batch) (paper: 20)."""
    t_start: Annotated[int, Interval(ge=0, lt=1000)] = 990
    """First timestep of CoGFD's window, inclusive (paper: 990)."""
    t_end: Annotated[int, Interval(gt=0, le=1000)] = 1000
    """End of CoGFD's window, exclusive (paper: 1000)."""
    window_ablation: Annotated[tuple[int, ...], Ge(0)] = (950, 800)
    """Extra window starts t_start (window [t_start, t_end)) the benchmark tries on every seed."""
    steps_ablation: Annotated[tuple[int, ...], Ge(1)] = (130,)
    """Extra CoGFD step counts the benchmark tries on every seed (paper: 130)."""
    lr_grid: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (1.25e-4, 5e-4, 2e-3, 8e-3, 3.2e-2)
    """Learning rates every fine-tuning eraser is tuned over on the validation seed."""
    uce_lambda_grid: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (0.01, 0.1, 1.0, 10.0, 100.0)
    """UCE's ridge weights tuned over on the validation seed (UCE has no learning rate)."""
    tune_seed: Annotated[int, Ge(0)] = 1000
    """Validation seed of the tuning (never one of the test seeds)."""
    erase_weight: Annotated[float, Ge(0)] = 0.1
    """Weight of exp(-L_e) in L = w exp(-L_e) + exp(L_r) (paper: 0.1)."""
    esd_eta: float = 1.0
    """ESD's negative-guidance scale eta."""
    ca_anchor: str = "blue circle"
    """Concept Ablation's anchor prompt, and UCE's target concept."""
    uce_lambda: Annotated[float, Gt(0)] = 0.1
    """UCE's ridge weight that keeps the edited projection near the original."""
    uce_preserve_scale: Annotated[float, Ge(0)] = 0.1
    """UCE's weight on the preserved prompts ("" and the sub-concepts, all token rows; official
    edit_model default 0.1)."""
    guidance: Annotated[float, Ge(0)] = 3.0
    """Classifier-free guidance scale of sampling."""
    ddim_steps: Annotated[int, Ge(1)] = 10
    """DDIM sampling steps ("trailing" spacing, so the first step is t = 999)."""
    eval_samples: Annotated[int, Ge(1)] = 8
    """Samples per evaluation prompt."""


PRESETS: dict[str, Config] = {
    "quick": Config(seeds=(0, 1, 2, 3, 4, 5)),
    "paper": Config(
        name="paper",
        out="runs/paper",
        pretrain_steps=2000,
        oracle_steps=2000,
        erase_steps=130,
        steps_ablation=(60,),
        eval_samples=16,
        seeds=(0, 1, 2, 3, 4, 5, 6, 7),
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
        image_size=32,
        widths=(64, 128, 128),
        pretrain_steps=20_000,
        pretrain_batch=128,
        pretrain_lr=1e-3,
        oracle_steps=2000,
        erase_steps=130,
        steps_ablation=(60,),
        erase_lr=1e-4,
        ddim_steps=50,
        eval_samples=256,
        seeds=(0, 1, 2, 3, 4, 5),
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    factor = 2 ** (len(cfg.widths) - 1)
    if cfg.image_size % factor != 0:
        raise ValueError(
            f"image_size must be divisible by 2**(len(widths)-1)={factor}, got {cfg.image_size}"
        )
    if cfg.t_start >= cfg.t_end:
        raise ValueError(
            f"timestep window [t_start, t_end) = [{cfg.t_start}, {cfg.t_end}) must be non-empty"
        )
    if any(t >= cfg.t_end for t in cfg.window_ablation):
        raise ValueError(
            f"window_ablation starts must lie in [0, t_end={cfg.t_end}), got {cfg.window_ablation}"
        )
    if cfg.tune_seed in cfg.seeds:
        raise ValueError(f"tune_seed {cfg.tune_seed} must not be one of the test seeds {cfg.seeds}")
    unknown = [m for m in cfg.methods if m not in METHODS]
    if unknown or "original" not in cfg.methods:
        raise ValueError(f"methods must include 'original' and come from {METHODS}, got {unknown}")
    return cfg
