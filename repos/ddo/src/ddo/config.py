"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`ddo train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

import torch

from .dual_averaging import SCHEDULES
from .objectives import OBJECTIVES


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for data, initialisation and sampling."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over (test seeds)."""
    val_seed: int = 100
    """Validation seed on which the benchmark tunes fit_lr (DDO) and ddpo_beta (Diffusion-DPO)."""
    device: str = "cpu"
    """Device recorded in the results; the 2-D toy computes on cpu (tensors are tiny)."""
    out: str = "runs/quick"
    """Folder for config.json and metrics.json."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    threads: int = 1
    """Torch intra-op threads (1 is fastest for these small tensors on shared cores)."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    objective: str = "dpo"
    """Alignment objective F: dpo, rlhf or kto."""
    n_modes: int = 6
    """Components of the reference Gaussian mixture (on a ring)."""
    radius: float = 4.0
    """Radius of the ring of component means."""
    sigma: float = 0.3
    """Standard deviation of every component."""
    target_mode: int = 0
    """Index of the mode whose mean the preference oracle favours."""
    pref_temperature: float = 1.0
    """Bradley-Terry temperature: r(x) = -||x - mu*|| / temperature."""
    beta: float = 1.0
    """KL weight beta of L(q) = F(q) + beta KL(q || p_ref)."""
    beta_prime: float = 1.0
    """Extra entropic regulariser beta' of dual averaging (the experiments use beta' = beta)."""
    beta_d: float = 1.0
    """Inverse temperature beta_d inside the DPO / KTO sigmoid."""
    da_schedule: str = "linear"
    """Weight c_k of beta' in DA: linear (c_k = k + 1, particle DA's schedule) or constant."""
    hard_objective: str = "rlhf"
    """Objective of the hard-tilt problem (the ULA vs h-transform claim): dpo, rlhf or kto."""
    hard_beta: float = 1.0
    """KL weight beta of the hard-tilt problem."""
    grid_da_loops: int = 20
    """Loops of exact dual averaging on the grid (schedule ablation and negative control)."""
    da_loops: int = 6
    """Dual-averaging loops K."""
    n_ref: int = 4096
    """Reference samples per DA loop (regression inputs and inner expectation)."""
    fit_steps: int = 300
    """Adam steps fitting the potential network per DA loop."""
    fit_lr: float = 0.01
    """Learning rate of the potential fit (the benchmark picks it from fit_lrs)."""
    fit_lrs: tuple[float, ...] = (0.003, 0.01, 0.03)
    """Validation grid of fit_lr (DDO's tuning budget, as large as Diffusion-DPO's)."""
    hidden: int = 64
    """Width of the potential MLP (2 hidden layers)."""
    n_eval: int = 2000
    """Aligned samples drawn per sampler for evaluation."""
    sde_steps: int = 100
    """Euler-Maruyama steps of the reverse SDE."""
    t_max: float = 5.0
    """Start time of the reverse SDE (the OU prior N(0, I) is exact up to e^{-t_max})."""
    t_min: float = 0.001
    """Stop time of the reverse SDE (the h-correction is singular at t = 0)."""
    mc_draws: int = 64
    """Posterior draws M per step for the Monte-Carlo h-correction."""
    learned_samples: int = 300
    """Samples of every learned-score sampler (DDO, Diffusion-DPO, learned reference)."""
    learned_sde_steps: int = 40
    """Reverse-SDE steps of every learned-score sampler (outer steps for DDO)."""
    inner_steps: int = 8
    """Steps of each inner reference simulation giving posterior draws (learned mode)."""
    dsm_steps: int = 2000
    """Denoising-score-matching steps for the learned reference score."""
    dsm_hidden: int = 128
    """Width of the score MLP (3 hidden layers)."""
    batch: int = 512
    """Batch size of score matching and Diffusion-DPO."""
    dsm_lr: float = 0.002
    """Learning rate of score matching."""
    ddpo_beta: float = 1000.0
    """beta of the Diffusion-DPO loss (diffusers' scale; the benchmark picks it from ddpo_betas)."""
    ddpo_betas: tuple[float, ...] = (100.0, 1000.0, 10000.0)
    """Validation grid of ddpo_beta (diffusers' default for Stable Diffusion is 2500)."""
    ddpo_lr: float = 0.0005
    """Learning rate of Diffusion-DPO fine-tuning (its steps = da_loops x fit_steps)."""
    langevin_steps: int = 500
    """Steps of the short-run ULA / MALA baselines."""
    langevin_step: float = 0.005
    """Step size of ULA / MALA."""
    ir_pool: int = 8000
    """Reference samples in the importance-resampling pool."""
    grid_step: float = 0.2
    """Cell width of the evaluation grid."""
    images: bool = False
    """Also run the 16x16 colour-image experiment (diffusers UNet2DModel; paper and full)."""
    image_runs: int = 1
    """How many of the benchmark's seeds (the first ones) also run the image experiment."""
    image_size: int = 16
    """Height and width of the procedural colour images."""
    image_channels: tuple[int, ...] = (32, 64)
    """block_out_channels of the UNet2DModel (attention in every block but the first)."""
    image_temperature: float = 0.1
    """Bradley-Terry temperature of the image reward -||mean colour - target|| / temperature."""
    image_train_steps: int = 20000
    """Denoising-score-matching steps of the UNet reference."""
    image_batch: int = 128
    """Batch size of the UNet's score matching and Diffusion-DPO."""
    image_ref: int = 4096
    """Reference images sampled from the UNet per DA loop (also the IR pool and the pairs)."""
    image_samples: int = 512
    """Aligned images drawn per sampler."""
    image_sde_steps: int = 100
    """Reverse-SDE steps of the image samplers (outer steps of the h-transform)."""
    image_inner_steps: int = 10
    """Steps of each inner UNet simulation giving posterior draws."""
    image_mc_draws: int = 16
    """Posterior draws M per outer step of the image h-transform sampler."""
    image_dpo_steps: int = 5000
    """Diffusion-DPO fine-tuning steps of the UNet."""
    image_ddpo_beta: float = 2500.0
    """beta of the image experiment's Diffusion-DPO (diffusers' default; not swept)."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # The smallest CPU scale where the effects should show (README: ~30 min on 2 cores):
    # five test seeds, 8 DA loops, the learned samplers at 500 samples and 80 steps (the exact
    # score's estimator bias at 40 steps is 0.19, at 100 steps 0.014), 2x the score-matching
    # steps, and the image experiment at CPU size on the first seed.
    "paper": Config(
        name="paper", out="runs/paper", seeds=(0, 1, 2, 3, 4), da_loops=8, mc_draws=32,
        learned_samples=500, learned_sde_steps=80, dsm_steps=4000, images=True, image_runs=1,
        image_channels=(16, 32), image_train_steps=1000, image_batch=32, image_ref=512,
        image_samples=128, image_sde_steps=20, image_inner_steps=3, image_mc_draws=8,
        image_dpo_steps=200,
    ),
    "full": Config(
        name="full", out="runs/full", device="cuda", seeds=(0, 1, 2, 3, 4), da_loops=10,
        n_ref=65536, fit_steps=3000, hidden=256, n_eval=20000, sde_steps=500, mc_draws=256,
        learned_samples=5000, learned_sde_steps=200, inner_steps=50, dsm_steps=50000,
        dsm_hidden=512, langevin_steps=5000, ir_pool=200000, grid_step=0.1, images=True,
        image_runs=5,
    ),
}  # fmt: skip


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    if cfg.beta <= 0:
        raise ValueError(f"beta must be > 0 (the KL weight), got {cfg.beta}")
    if cfg.beta_prime < 0 or cfg.beta_d <= 0:
        raise ValueError(f"need beta_prime >= 0 and beta_d > 0, got {cfg.beta_prime}, {cfg.beta_d}")
    for field in ("objective", "hard_objective"):
        if getattr(cfg, field) not in OBJECTIVES:
            raise ValueError(f"{field} must be one of {OBJECTIVES}, got {getattr(cfg, field)!r}")
    if cfg.da_schedule not in SCHEDULES:
        raise ValueError(f"da_schedule must be one of {SCHEDULES}, got {cfg.da_schedule!r}")
    positive = {
        "hard_beta": (cfg.hard_beta,), "fit_lr": (cfg.fit_lr,), "fit_lrs": cfg.fit_lrs,
        "ddpo_beta": (cfg.ddpo_beta,), "ddpo_betas": cfg.ddpo_betas,
        "image_ddpo_beta": (cfg.image_ddpo_beta,),
    }  # fmt: skip
    for field, values in positive.items():
        if not values or min(values) <= 0:
            raise ValueError(f"{field} must hold values > 0, got {values}")
    if cfg.val_seed in cfg.seeds:
        raise ValueError(f"val_seed {cfg.val_seed} must differ from the test seeds {cfg.seeds}")
    if not 0 <= cfg.target_mode < cfg.n_modes:
        raise ValueError(f"target_mode must be in [0, {cfg.n_modes}), got {cfg.target_mode}")
    if not 0 < cfg.t_min < cfg.t_max:
        raise ValueError(f"need 0 < t_min < t_max, got {cfg.t_min} and {cfg.t_max}")
    counts = {
        "da_loops": cfg.da_loops, "n_ref": cfg.n_ref, "fit_steps": cfg.fit_steps,
        "n_eval": cfg.n_eval, "sde_steps": cfg.sde_steps, "mc_draws": cfg.mc_draws,
        "learned_samples": cfg.learned_samples, "learned_sde_steps": cfg.learned_sde_steps,
        "inner_steps": cfg.inner_steps, "dsm_steps": cfg.dsm_steps, "batch": cfg.batch,
        "langevin_steps": cfg.langevin_steps, "ir_pool": cfg.ir_pool, "threads": cfg.threads,
        "image_size": cfg.image_size, "image_train_steps": cfg.image_train_steps,
        "image_batch": cfg.image_batch, "image_ref": cfg.image_ref,
        "image_samples": cfg.image_samples, "image_sde_steps": cfg.image_sde_steps,
        "image_inner_steps": cfg.image_inner_steps, "image_mc_draws": cfg.image_mc_draws,
        "image_dpo_steps": cfg.image_dpo_steps, "image_runs": cfg.image_runs, "grid_da_loops": cfg.grid_da_loops,
    }  # fmt: skip
    for field, value in counts.items():
        if value < 1:
            raise ValueError(f"{field} must be >= 1, got {value}")
    if cfg.sigma <= 0 or cfg.radius <= 0 or cfg.grid_step <= 0:
        raise ValueError("sigma, radius and grid_step must be > 0")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    if cfg.images:
        if not cfg.image_channels or min(cfg.image_channels) < 1 or cfg.image_temperature <= 0:
            raise ValueError("image_channels must be positive widths and image_temperature > 0")
        if cfg.image_size % 2 ** (len(cfg.image_channels) - 1):
            raise ValueError(
                f"image_size {cfg.image_size} must be divisible by 2^(len(image_channels) - 1)"
            )
        if cfg.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(
                f"device {cfg.device!r} requested but CUDA is not available; "
                "pass --device cpu to run the image experiment on the CPU"
            )
    return cfg
