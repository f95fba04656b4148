"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`ddo train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .dual_averaging import SCHEDULES
from .objectives import OBJECTIVES
from .runtime import Annotated, Ge, Gt, MinLen, RunConfig, check_bounds

IMAGE_POTENTIALS = ("features", "pixels")


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    """The 2-D toy computes on cpu (its tensors are tiny); the device runs the image experiment."""

    val_seed: Annotated[int, Ge(0)] = 100
    """Validation seed on which the benchmark tunes fit_lr (DDO) and ddpo_beta (Diffusion-DPO)."""
    objective: str = "dpo"
    """Alignment objective F: dpo, rlhf or kto."""
    n_modes: Annotated[int, Ge(1)] = 6
    """Components of the reference Gaussian mixture (on a ring)."""
    radius: Annotated[float, Gt(0)] = 4.0
    """Radius of the ring of component means."""
    sigma: Annotated[float, Gt(0)] = 0.3
    """Standard deviation of every component."""
    target_mode: Annotated[int, Ge(0)] = 0
    """Index of the mode whose mean the preference oracle favours."""
    pref_temperature: Annotated[float, Gt(0)] = 1.0
    """Bradley-Terry temperature: r(x) = -||x - mu*|| / temperature."""
    beta: Annotated[float, Gt(0)] = 1.0
    """KL weight beta of L(q) = F(q) + beta KL(q || p_ref)."""
    beta_prime: Annotated[float, Ge(0)] = 1.0
    """Extra entropic regulariser beta' of dual averaging (the experiments use beta' = beta)."""
    beta_d: Annotated[float, Gt(0)] = 1.0
    """Inverse temperature beta_d inside the DPO / KTO sigmoid."""
    da_schedule: str = "linear"
    """Weight c_k of beta' in DA: linear (c_k = k + 1, particle DA's schedule) or constant."""
    hard_objective: str = "rlhf"
    """Objective of the hard-tilt problem (the ULA vs h-transform claim): dpo, rlhf or kto."""
    hard_beta: Annotated[float, Gt(0)] = 1.0
    """KL weight beta of the hard-tilt problem."""
    grid_da_loops: Annotated[int, Ge(1)] = 20
    """Loops of exact dual averaging on the grid (schedule ablation and negative control)."""
    da_loops: Annotated[int, Ge(1)] = 6
    """Dual-averaging loops K."""
    n_ref: Annotated[int, Ge(1)] = 4096
    """Reference samples per DA loop (regression inputs and inner expectation)."""
    fit_steps: Annotated[int, Ge(1)] = 300
    """Adam steps fitting the potential network per DA loop."""
    fit_lr: Annotated[float, Gt(0)] = 0.01
    """Learning rate of the potential fit (the benchmark picks it from fit_lrs)."""
    fit_lrs: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (0.003, 0.01, 0.03)
    """Validation grid of fit_lr (DDO's tuning budget, as large as Diffusion-DPO's)."""
    hidden: Annotated[int, Ge(1)] = 64
    """Width of the potential MLP (2 hidden layers)."""
    n_eval: Annotated[int, Ge(1)] = 2000
    """Aligned samples drawn per sampler for evaluation."""
    sde_steps: Annotated[int, Ge(1)] = 100
    """Euler-Maruyama steps of the reverse SDE."""
    t_max: Annotated[float, Gt(0)] = 5.0
    """Start time of the reverse SDE (the OU prior N(0, I) is exact up to e^{-t_max})."""
    t_min: Annotated[float, Gt(0)] = 0.001
    """Stop time of the reverse SDE (the h-correction is singular at t = 0)."""
    mc_draws: Annotated[int, Ge(1)] = 64
    """Posterior draws M per step for the Monte-Carlo h-correction."""
    learned_samples: Annotated[int, Ge(1)] = 300
    """Samples of every learned-score sampler (DDO, Diffusion-DPO, learned reference)."""
    learned_sde_steps: Annotated[int, Ge(1)] = 40
    """Reverse-SDE steps of every learned-score sampler (outer steps for DDO)."""
    inner_steps: Annotated[int, Ge(1)] = 8
    """Steps of each inner reference simulation giving posterior draws (learned mode)."""
    dsm_steps: Annotated[int, Ge(1)] = 2000
    """Denoising-score-matching steps for the learned reference score."""
    dsm_hidden: Annotated[int, Ge(1)] = 128
    """Width of the score MLP (3 hidden layers)."""
    batch: Annotated[int, Ge(1)] = 512
    """Batch size of score matching and Diffusion-DPO."""
    dsm_lr: Annotated[float, Gt(0)] = 0.002
    """Learning rate of score matching."""
    ddpo_beta: Annotated[float, Gt(0)] = 1000.0
    """beta of the Diffusion-DPO loss (diffusers' scale; the benchmark picks it from ddpo_betas)."""
    ddpo_betas: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (100.0, 1000.0, 10000.0)
    """Validation grid of ddpo_beta (diffusers' default for Stable Diffusion is 2500)."""
    ddpo_lr: Annotated[float, Gt(0)] = 0.0005
    """Learning rate of Diffusion-DPO fine-tuning (its steps = da_loops x fit_steps)."""
    langevin_steps: Annotated[int, Ge(1)] = 500
    """Steps of the short-run ULA / MALA baselines."""
    langevin_step: Annotated[float, Gt(0)] = 0.005
    """Step size of ULA / MALA."""
    ir_pool: Annotated[int, Ge(1)] = 8000
    """Reference samples in the importance-resampling pool."""
    grid_step: Annotated[float, Gt(0)] = 0.2
    """Cell width of the evaluation grid."""
    images: bool = False
    """Also run the 16x16 colour-image experiment (diffusers UNet2DModel; paper and full)."""
    image_runs: Annotated[int, Ge(1)] = 1
    """How many of the benchmark's seeds (the first ones) also run the image experiment."""
    image_size: Annotated[int, Ge(1)] = 16
    """Height and width of the procedural colour images."""
    image_channels: Annotated[tuple[int, ...], MinLen(1), Ge(1)] = (32, 64)
    """block_out_channels of the UNet2DModel (attention in every block but the first)."""
    image_temperature: Annotated[float, Gt(0)] = 0.1
    """Bradley-Terry temperature of the image reward -||mean colour - target|| / temperature."""
    image_train_steps: Annotated[int, Ge(1)] = 20000
    """Denoising-score-matching steps of the UNet reference."""
    image_batch: Annotated[int, Ge(1)] = 128
    """Batch size of the UNet's score matching and Diffusion-DPO."""
    image_ref: Annotated[int, Ge(1)] = 4096
    """Reference images sampled from the UNet per DA loop (also the IR pool and the pairs)."""
    image_samples: Annotated[int, Ge(1)] = 512
    """Aligned images drawn per sampler."""
    image_sde_steps: Annotated[int, Ge(1)] = 100
    """Reverse-SDE steps of the image samplers (outer steps of the h-transform)."""
    image_inner_steps: Annotated[int, Ge(1)] = 10
    """Steps of each inner UNet simulation giving posterior draws."""
    image_mc_draws: Annotated[int, Ge(1)] = 16
    """Posterior draws M per outer step of the image h-transform sampler."""
    image_dpo_steps: Annotated[int, Ge(1)] = 5000
    """Diffusion-DPO fine-tuning steps of the UNet."""
    image_ddpo_beta: Annotated[float, Gt(0)] = 2500.0
    """beta of the image experiment's Diffusion-DPO (diffusers' default; not swept)."""
    image_potential: str = "features"
    """DA's image potential: an MLP on the UNet's pooled features (features) or on pixels."""
    image_feature_t: Annotated[float, Gt(0)] = 0.05
    """OU time at which the UNet reads an image for its pooled features."""
    image_fit_lr: Annotated[float, Gt(0)] = 0.003
    """Learning rate of the image potential's fit (the 2-D tuning of fit_lr does not apply)."""
    image_pipeline: str = ""
    """Local diffusers pipeline folder (unet/, scheduler/) to align instead of training a UNet."""
    image_preferences: str = ""
    """Preference file (.npz: winners, losers of shape (n, 3, size, size)) instead of the oracle."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # The smallest CPU scale where the effects should show (README: ~30 min on 2 cores):
    # five test seeds, 8 DA loops, the learned samplers at 500 samples and 80 steps (the exact
    # score's estimator bias at 40 steps is 0.19, at 100 steps 0.014), 2x the score-matching
    # steps, and the image experiment at CPU size on the first three seeds (a claim needs 3).
    "paper": Config(
        name="paper", out="runs/paper", seeds=(0, 1, 2, 3, 4), da_loops=8, mc_draws=32,
        learned_samples=500, learned_sde_steps=80, dsm_steps=4000, images=True, image_runs=3,
        image_channels=(16, 32), image_train_steps=1000, image_batch=32, image_ref=512,
        image_samples=128, image_sde_steps=20, image_inner_steps=3, image_mc_draws=8,
        image_dpo_steps=200,
    ),
    "full": Config(
        name="full", out="runs/full", device="auto", seeds=(0, 1, 2, 3, 4), da_loops=10,
        n_ref=65536, fit_steps=3000, hidden=256, n_eval=20000, sde_steps=500, mc_draws=256,
        learned_samples=5000, learned_sde_steps=200, inner_steps=50, dsm_steps=50000,
        dsm_hidden=512, langevin_steps=5000, ir_pool=200000, grid_step=0.1, images=True,
        image_runs=5,
    ),
}  # fmt: skip


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    for field in ("objective", "hard_objective"):
        if getattr(cfg, field) not in OBJECTIVES:
            raise ValueError(f"{field} must be one of {OBJECTIVES}, got {getattr(cfg, field)!r}")
    if cfg.da_schedule not in SCHEDULES:
        raise ValueError(f"da_schedule must be one of {SCHEDULES}, got {cfg.da_schedule!r}")
    if cfg.val_seed in cfg.seeds:
        raise ValueError(f"val_seed {cfg.val_seed} must differ from the test seeds {cfg.seeds}")
    if cfg.target_mode >= cfg.n_modes:
        raise ValueError(f"target_mode must be in [0, {cfg.n_modes}), got {cfg.target_mode}")
    if cfg.t_min >= cfg.t_max:
        raise ValueError(f"need t_min < t_max, got {cfg.t_min} and {cfg.t_max}")
    if cfg.image_potential not in IMAGE_POTENTIALS:
        raise ValueError(
            f"image_potential must be one of {IMAGE_POTENTIALS}, got {cfg.image_potential!r}"
        )
    for field in ("image_pipeline", "image_preferences"):
        if getattr(cfg, field) and not Path(getattr(cfg, field)).exists():
            raise ValueError(f"{field}: {getattr(cfg, field)} does not exist")
    if cfg.images and cfg.image_size % 2 ** (len(cfg.image_channels) - 1):
        raise ValueError(
            f"image_size {cfg.image_size} must be divisible by 2^(len(image_channels) - 1)"
        )
    return cfg
