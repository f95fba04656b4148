"""The full preset's image experiment: 16x16 colour images with a diffusers UNet2DModel.

The paper aligns image diffusion models toward a target colour. Here, at a size a GPU trains in
minutes:

* data: procedural images (`coloured_shapes`), one disc or square of a random colour on a
  random dark background, a deterministic function of the generator's seed;
* reference model: a diffusers `UNet2DModel` (epsilon prediction) trained from scratch by
  denoising score matching under our OU / VP schedule (a_t = e^{-t}, v_t = 1 - e^{-2t}),
  with EDM's skip so that the reverse SDE keeps samples at the data's scale (`UNetEps`);
* reward: closeness of the image's mean colour to a target colour (the brief's (0.9, 0.9, 0.9));
* DDO: exactly the 2-D code path, dual averaging (`dual_averaging`) with reference samples drawn
  from the UNet, then the h-transform sampler (`h_transform_sample`) with posterior draws from
  re-running the UNet's reverse SDE (`simulated_posterior`). Images are flattened to
  d = 3 * 16 * 16 so the potential and the samplers see the same (n, d) tensors as in 2-D.
* baselines: the unaligned reference, importance resampling of reference samples, and
  Diffusion-DPO fine-tuning of the UNet on the same kind of pairs.
"""

from __future__ import annotations

import functools
import io
import itertools
from pathlib import Path

import numpy as np
import torch
from torch import nn

from . import baselines
from .config import Config
from .dual_averaging import dual_averaging
from .h_transform import h_transform_sample, reverse_sde, simulated_posterior, time_grid
from .objectives import pairwise_dpo_loss, preference_prob
from .reference import ou_coefficients
from .results import atomic_write_bytes

TARGET_COLOUR = (0.9, 0.9, 0.9)  # the brief's target, in [0, 1] RGB
CHANNELS = 3
SIGMA_DATA = 0.5  # EDM's data standard deviation for images in [-1, 1]; ours: std 0.42, rms 0.69


def coloured_shapes(n: int, size: int, g: torch.Generator) -> torch.Tensor:
    """n images (n, 3, size, size) in [-1, 1]: a disc or square of a random colour on a dark
    random background, random centre and radius; deterministic in the generator's state."""
    colour = torch.rand(n, CHANNELS, 1, 1, generator=g)
    background = 0.3 * torch.rand(n, CHANNELS, 1, 1, generator=g)
    centre = size * (0.25 + 0.5 * torch.rand(n, 2, 1, 1, generator=g))
    radius = size * (0.15 + 0.2 * torch.rand(n, 1, 1, generator=g))
    is_disc = torch.rand(n, 1, 1, generator=g) < 0.5
    axis = torch.arange(size, dtype=torch.float32) + 0.5
    dy = axis[None, :, None] - centre[:, 0]
    dx = axis[None, None, :] - centre[:, 1]
    disc = dx**2 + dy**2 <= radius**2
    square = torch.maximum(dx.abs(), dy.abs()) <= radius
    mask = torch.where(is_disc, disc, square)[:, None]  # (n, 1, size, size)
    image = torch.where(mask, colour, background)
    return 2 * image - 1


def colour_reward(x: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """r(x) = -||mean colour of x - target|| / temperature, mean colour in [0, 1] RGB.

    x holds flattened images (n, 3 * size * size) in [-1, 1].
    """
    return -colour_distance(x) / temperature


def colour_distance(x: torch.Tensor) -> torch.Tensor:
    """||mean colour - target colour|| per flattened image (the experiment's main metric)."""
    mean = ((x.reshape(x.shape[0], CHANNELS, -1) + 1) / 2).mean(-1)
    return (mean - torch.tensor(TARGET_COLOUR, device=x.device)).norm(dim=-1)


class UNetEps(nn.Module):
    """eps_theta(x_t, t) of a diffusers UNet2DModel on flattened images (epsilon prediction).

    Preconditioned as in EDM (Karras et al. 2022, Sec. 5 and Table 1), written for epsilon:

        eps_theta(x, t) = sqrt(v_t) x / s_t^2 + (a_t sigma_d / s_t) F(x / s_t, 1000 t / t_max),

    with s_t^2 = a_t^2 sigma_d^2 + v_t. The first term is E[eps | x_t] for N(0, sigma_d^2 I)
    data, so the network F only learns the residual. Without that skip the UNet (which ends in
    GroupNorm -> SiLU -> conv) returns an output of about unit size whatever the input's size:
    at high noise the reverse drift x + 2 score = x - 2 eps / sqrt(v_t) then has no restoring
    force once x leaves the training shell, and small errors grew to |x| ~ 20 (README). The
    continuous OU time enters the UNet's sinusoidal timestep embedding as the float
    1000 t / t_max; large inputs are split into chunks of `chunk` images.
    """

    def __init__(
        self,
        size: int,
        channels: tuple[int, ...],
        t_max: float,
        chunk: int = 4096,
        sigma_data: float = SIGMA_DATA,
    ):
        super().__init__()
        from diffusers import UNet2DModel  # the images extra; the 2-D runs do not need it

        down = ("DownBlock2D",) + ("AttnDownBlock2D",) * (len(channels) - 1)
        up = ("AttnUpBlock2D",) * (len(channels) - 1) + ("UpBlock2D",)
        self.unet = UNet2DModel(
            sample_size=size, in_channels=CHANNELS, out_channels=CHANNELS,
            block_out_channels=tuple(channels), layers_per_block=1, down_block_types=down,
            up_block_types=up, norm_num_groups=min(8, min(channels)),
        )  # fmt: skip
        self.size, self.t_max, self.chunk, self.sigma_data = size, t_max, chunk, sigma_data

    def timestep(self, t: torch.Tensor) -> torch.Tensor:
        """The UNet's timestep input for OU time t (a float: no rounding to integer steps)."""
        return 1000 * t / self.t_max

    def residual(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """F(x, t): the raw UNet on images (n, 3, size, size), chunked."""
        out = [
            self.unet(x[i : i + self.chunk], self.timestep(t[i : i + self.chunk])).sample
            for i in range(0, x.shape[0], self.chunk)
        ]
        return torch.cat(out)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x, t = x.reshape(-1, CHANNELS, self.size, self.size), t.reshape(-1)
        a, v = ou_coefficients(t)
        a, v = a.to(x.dtype)[:, None, None, None], v.to(x.dtype)[:, None, None, None]
        s = (a**2 * self.sigma_data**2 + v).sqrt()
        eps = v.sqrt() * x / s**2 + (a * self.sigma_data / s) * self.residual(x / s, t)
        return eps.reshape(shape)

    def score(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return baselines.eps_to_score(self, x, t)


def _sampler(score, dim: int, times: torch.Tensor, g: torch.Generator, device, chunk: int = 4096):
    """n draws of the reference reverse SDE (with score `score`), made `chunk` at a time."""

    def sample(n: int) -> torch.Tensor:
        parts = [
            reverse_sde(score, torch.randn(m, dim, generator=g).to(device), times, g)
            for m in [min(chunk, n - i) for i in range(0, n, chunk)]
        ]
        return torch.cat(parts)

    return sample


def _pairs(x1: torch.Tensor, x2: torch.Tensor, reward_fn, g: torch.Generator):
    """Label the pairs (x1, x2) with the Bradley-Terry oracle: (winners, losers)."""
    p = preference_prob(reward_fn(x1), reward_fn(x2)).cpu()
    keep = (torch.rand(x1.shape[0], generator=g) < p).to(x1.device)[:, None]
    return torch.where(keep, x1, x2), torch.where(keep, x2, x1)


def _difference(a: torch.Tensor, b: torch.Tensor) -> dict[str, float]:
    """mean(a) - mean(b) of two independent samples with its 95% normal interval."""
    diff = float(a.mean() - b.mean())
    half = 1.96 * float((a.var() / a.numel() + b.var() / b.numel()).sqrt())
    return {"": diff, "_low": diff - half, "_high": diff + half}


def run_images(cfg: Config, workdir: Path, g: torch.Generator) -> dict[str, float]:
    """Train the UNet reference, run DDO and the baselines on images; metrics "Images: <m>/<k>".

    One pool of 2 x image_ref reference images serves every loop of DA (its two halves are the
    regression inputs and the inner expectation's x'), the importance-resampling pool and the
    Diffusion-DPO pairs, so the UNet's reverse SDE runs once for all of them.
    """
    device = torch.device(cfg.device)
    size = cfg.image_size
    dim = CHANNELS * size * size
    reward_fn = functools.partial(colour_reward, temperature=cfg.image_temperature)
    unet = UNetEps(size, cfg.image_channels, cfg.t_max).to(device)
    baselines.train_dsm(
        lambda n: coloured_shapes(n, size, g).reshape(n, dim), cfg.image_train_steps,
        cfg.image_batch, cfg.dsm_lr, cfg.t_min, cfg.t_max, g, model=unet,
    )  # fmt: skip
    unet.eval()
    times = time_grid(cfg.t_max, cfg.t_min, cfg.image_sde_steps)
    sample_ref = _sampler(unet.score, dim, times, g, device)
    pool = sample_ref(2 * cfg.image_ref)
    halves = (pool[: cfg.image_ref], pool[cfg.image_ref :])
    calls = itertools.count()

    def from_pool(n: int) -> torch.Tensor:  # alternate halves: x and x' always differ
        return halves[next(calls) % 2][:n]

    potentials = dual_averaging(
        cfg.objective, from_pool, reward_fn, cfg.da_loops, cfg.image_ref, cfg.beta,
        cfg.beta_prime, cfg.beta_d, cfg.fit_steps, cfg.fit_lr, cfg.hidden, cfg.da_schedule,
        device=device,
    )  # fmt: skip
    f = potentials[-1]
    posterior = simulated_posterior(unet.score, cfg.image_inner_steps, cfg.t_min, g)
    samples = {
        "DDO": h_transform_sample(
            unet.score, posterior, f, cfg.image_samples, dim, times, cfg.image_mc_draws, g, device
        ),
        "Reference": sample_ref(cfg.image_samples),
        "Reference (second draw)": sample_ref(cfg.image_samples),
    }
    with torch.no_grad():
        samples["Importance resampling"], ess = baselines.importance_resample(
            pool, -f(pool), cfg.image_samples, g
        )
    x_w, x_l = _pairs(*halves, reward_fn, g)
    ddpo = baselines.diffusion_dpo(
        unet, x_w, x_l, cfg.image_dpo_steps, cfg.image_batch, cfg.ddpo_lr, cfg.image_ddpo_beta,
        cfg.t_min, cfg.t_max, g,
    )  # fmt: skip
    samples["Diffusion-DPO"] = _sampler(ddpo.score, dim, times, g, device)(cfg.image_samples)
    held_w, held_l = _pairs(sample_ref(cfg.image_samples), sample_ref(cfg.image_samples),
                            reward_fn, g)  # fmt: skip
    metrics = {"Images: Importance resampling/ess": ess}
    with torch.no_grad():
        for k, pot in enumerate(potentials):
            metrics[f"Images: DDO/heldout_dpo_loop{k}"] = float(
                pairwise_dpo_loss(pot(held_w), pot(held_l), cfg.beta_d)
            )
    ref_distance = colour_distance(samples["Reference"])
    for name, x in samples.items():
        distance = colour_distance(x)
        metrics[f"Images: {name}/colour_distance"] = float(distance.mean())
        metrics[f"Images: {name}/reward"] = float(reward_fn(x).mean())
        metrics[f"Images: {name}/in_range"] = float((x.abs() <= 1.1).float().mean())
        if name != "Reference":
            for suffix, value in _difference(distance, ref_distance).items():
                metrics[f"Images: {name}/colour_distance_minus_reference{suffix}"] = value
    buf = io.BytesIO()
    arrays = {n: x.reshape(-1, CHANNELS, size, size).cpu().numpy() for n, x in samples.items()}
    np.savez(buf, **arrays)
    atomic_write_bytes(Path(workdir) / "images.npz", buf.getvalue())
    return metrics
