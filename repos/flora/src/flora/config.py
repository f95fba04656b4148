"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`flora train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .runtime import Annotated, Ge, Gt, MinLen, RunConfig, check_bounds

METHODS = (
    "flora", "flora_flat", "lora", "dora", "locon_tucker", "loha", "lokr",
    "full", "linear_probe", "bitfit",
)  # fmt: skip
STRUCTURE_METHODS = ("flora", "lora", "loha", "lokr")
BACKBONES = ("cnn", "mlp", "vit", "convnext")


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    task: str = "transfer"
    """What `train` runs: structure (fit a synthetic Conv2d update) or transfer (fine-tune)."""
    method: str = "flora"
    """What `train` fits: flora, flora_flat (ablation: FLoRA on the flattened matrix), lora, dora,
    locon_tucker (LyCORIS), loha, lokr, full, linear_probe or bitfit."""
    struct_channels: Annotated[int, Ge(1)] = 64
    """Structure task: in = out channels of the Conv2d whose update is fitted."""
    struct_kernel: Annotated[int, Ge(1)] = 3
    """Structure task: kernel size of that Conv2d."""
    teacher_tucker_ranks: Annotated[tuple[int, ...], MinLen(4), Ge(1)] = (8, 8, 3, 3)
    """Structure task: Tucker ranks (out, in, k, k) of the Tucker-structured target."""
    teacher_matrix_rank: Annotated[int, Ge(1)] = 8
    """Structure task: matrix rank of the control target after reshaping to (out, in*k*k)."""
    struct_levels: Annotated[tuple[int, ...], MinLen(1), Ge(1)] = (4, 8)
    """Structure task: ranks swept; FLoRA uses (r, r, k, k), the peft methods rank r."""
    struct_steps: Annotated[int, Ge(1)] = 300
    """Structure task: Adam steps per fit (cosine schedule)."""
    struct_batch: Annotated[int, Ge(1)] = 64
    """Structure task: random k x k input patches per step."""
    struct_lr: Annotated[float, Gt(0)] = 2e-2
    """Structure task: Adam learning rate."""
    struct_tol: Annotated[float, Gt(0)] = 0.05
    """Structure task: relative error ||dW - dW*|| / ||dW*|| that counts as recovered."""
    backbones: Annotated[tuple[str, ...], MinLen(1)] = ("cnn", "vit")
    """Transfer task: backbones to adapt (cnn, mlp, vit, convnext); the first carries the claims."""
    image_size: Annotated[int, Ge(1)] = 8
    """Transfer task: digits are resized to this side length (the CNN and MLP use 8)."""
    pretrain_epochs: Annotated[int, Ge(0)] = 15
    """Transfer task: epochs of pretraining on digits 0-4."""
    pretrain_lr: Annotated[float, Gt(0)] = 3e-3
    """Transfer task: Adam learning rate of the pretraining (fixed: not part of any tuning)."""
    epochs: Annotated[int, Ge(1)] = 8
    """Transfer task: fine-tuning epochs."""
    batch_size: Annotated[int, Ge(1)] = 32
    """Transfer task: minibatch size."""
    lr: Annotated[float, Gt(0)] = 3e-3
    """Transfer task: Adam learning rate of `train` (the benchmark tunes it on lr_grid)."""
    lora_rank: Annotated[int, Ge(1)] = 4
    """Transfer task: LoRA rank that sets the budget of `train`; every other adapter gets per-layer
    ranks whose trainable count is within 2.5% of LoRA's where one-rank moves allow it."""
    scale: Annotated[float, Gt(0)] = 2.0
    """Adapter scale of `train`: FLoRA's s, alpha / r for LoRA, DoRA, LoCon, LoHa and LoKr."""
    budget_ranks: Annotated[tuple[int, ...], MinLen(1), Ge(1)] = (4,)
    """Benchmark: LoRA ranks that set the parameter budgets compared."""
    lr_grid: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (1e-3, 3e-3, 1e-2, 3e-2)
    """Benchmark: learning rates every method is tuned over (validation split, first seed)."""
    scale_grid: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (1.0, 4.0)
    """Benchmark: adapter scales every adapter method is tuned over, crossed with lr_grid."""
    tune_rank: Annotated[int, Ge(0)] = 0
    """Benchmark: the budget (a LoRA rank in budget_ranks) the grid search runs at, its choice
    reused at the other budgets; 0 tunes at every budget."""
    shuffle_labels: bool = False
    """Negative control: train on randomly permuted labels (test labels stay true)."""
    convnext_depths: Annotated[tuple[int, ...], MinLen(1), Ge(1)] = (3, 3, 9, 3)
    """ConvNeXt blocks per stage (ConvNeXt-T), when built from a config."""
    convnext_dims: Annotated[tuple[int, ...], MinLen(1), Ge(1)] = (96, 192, 384, 768)
    """ConvNeXt channels per stage (ConvNeXt-T), when built from a config."""
    checkpoint: str = ""
    """Local transformers ConvNeXt checkpoint folder; empty: pretrain from scratch on digits 0-4."""
    data_dir: str = ""
    """Image folder (root/<class>/*.png) to adapt to; empty: the digits shift and rotated tasks."""


PRESETS: dict[str, Config] = {
    # quick tunes on three learning rates (1e-3 was never chosen at the paper preset, v2 results)
    "quick": Config(lr_grid=(3e-3, 1e-2, 3e-2)),
    "paper": Config(
        name="paper",
        out="runs/paper",
        seeds=(0, 1, 2, 3, 4),
        epochs=12,
        lr_grid=(1e-3, 3e-3, 1e-2, 3e-2),
        budget_ranks=(2, 4, 8),
        scale_grid=(0.5, 2.0, 8.0),
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
        seeds=(0, 1, 2, 3, 4),
        struct_channels=256,
        teacher_tucker_ranks=(16, 16, 3, 3),
        teacher_matrix_rank=16,
        struct_levels=(4, 8, 12, 16, 24, 32),
        struct_steps=3000,
        struct_batch=512,
        backbones=("convnext", "vit"),
        image_size=32,
        pretrain_epochs=60,
        epochs=40,
        batch_size=64,
        lora_rank=8,
        budget_ranks=(4, 8, 16),
        tune_rank=8,
        scale_grid=(0.5, 2.0, 8.0),
        threads=8,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    if cfg.task not in ("structure", "transfer"):
        raise ValueError(f"task must be structure or transfer, got {cfg.task!r}")
    allowed = STRUCTURE_METHODS if cfg.task == "structure" else METHODS
    if cfg.method not in allowed:
        raise ValueError(f"method for task {cfg.task} must be one of {allowed}, got {cfg.method!r}")
    if bad := [b for b in cfg.backbones if b not in BACKBONES]:
        raise ValueError(f"backbones must come from {BACKBONES}, got {bad}")
    if cfg.tune_rank and cfg.tune_rank not in cfg.budget_ranks:
        raise ValueError(
            f"tune_rank {cfg.tune_rank} must be 0 or one of budget_ranks {cfg.budget_ranks}"
        )
    if cfg.data_dir and not Path(cfg.data_dir).is_dir():
        raise ValueError(
            f"image folder {cfg.data_dir} has no class sub-folders (no such folder; expected "
            "root/<class>/*.png)"
        )
    if cfg.checkpoint and not Path(cfg.checkpoint).is_dir():
        raise ValueError(
            f"checkpoint {cfg.checkpoint} is not a folder (a local transformers ConvNeXt)"
        )
    if len(cfg.teacher_tucker_ranks) != 4:
        raise ValueError(
            f"teacher_tucker_ranks needs 4 ranks (out, in, k, k), got {cfg.teacher_tucker_ranks}"
        )
    if cfg.struct_channels < max(cfg.struct_levels):
        raise ValueError(
            f"struct_levels {cfg.struct_levels} exceed struct_channels {cfg.struct_channels}"
        )
    return cfg
