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
import math
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


class PipelineEps(nn.Module):
    """eps_theta(x_t, t) of a pretrained diffusers pipeline's UNet (raw epsilon prediction, no
    preconditioning), on our continuous OU time.

    A DDPM-type scheduler's x_tau = sqrt(abar_tau) x_0 + sqrt(1 - abar_tau) eps is the OU
    marginal at t = -log(abar_tau) / 2, so OU time t maps to the fractional timestep tau(t) by
    interpolating that (increasing) table; t outside the table's range is refused.
    """

    def __init__(self, unet: nn.Module, alphas_cumprod: torch.Tensor, chunk: int = 4096):
        super().__init__()
        self.unet, self.chunk = unet, chunk
        self.size = int(unet.config.sample_size)
        self.register_buffer("t_of_tau", -0.5 * alphas_cumprod.double().log(), persistent=False)

    def timestep(self, t: torch.Tensor) -> torch.Tensor:
        table = self.t_of_tau.to(t.device)
        lo, hi = float(table[0]), float(table[-1])
        if float(t.min()) < lo * (1 - 1e-6) or float(t.max()) > hi * (1 + 1e-6):
            raise ValueError(
                f"OU time must lie in the pipeline scheduler's range [{lo:.4g}, {hi:.4g}] "
                f"(set --t-min / --t-max inside it), got [{float(t.min()):.4g}, "
                f"{float(t.max()):.4g}]"
            )
        t = t.double().clamp(lo, hi)
        k = torch.searchsorted(table, t).clamp(1, table.numel() - 1)
        frac = (t - table[k - 1]) / (table[k] - table[k - 1])
        return (k - 1 + frac).float()

    residual = UNetEps.residual

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x, t = x.reshape(-1, CHANNELS, self.size, self.size), t.reshape(-1)
        return self.residual(x, t).reshape(shape)

    def score(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return baselines.eps_to_score(self, x, t)


def load_pipeline(path: str | Path, size: int, device) -> PipelineEps:
    """The UNet and scheduler of a local diffusers pipeline folder (DDPMPipeline.save_pretrained:
    unet/ and scheduler/; no download), as a PipelineEps; one-line errors name the folder."""
    from diffusers import DDPMScheduler, UNet2DModel

    path = Path(path)
    if not (path / "unet").is_dir() or not (path / "scheduler").is_dir():
        raise ValueError(f"image_pipeline {path}: expected a diffusers pipeline folder with "
                         "unet/ and scheduler/ (DDPMPipeline.save_pretrained)")  # fmt: skip
    try:
        unet = UNet2DModel.from_pretrained(path / "unet", local_files_only=True)
        scheduler = DDPMScheduler.from_pretrained(path / "scheduler", local_files_only=True)
    except (OSError, ValueError, TypeError) as err:
        raise ValueError(f"image_pipeline {path}: cannot load ({err})") from err
    got = (unet.config.in_channels, unet.config.out_channels, unet.config.sample_size)
    if got != (CHANNELS, CHANNELS, size):
        raise ValueError(f"image_pipeline {path}: need a 3-channel UNet of sample_size {size} "
                         f"(--image-size), got (in, out, size) = {got}")  # fmt: skip
    if scheduler.config.prediction_type != "epsilon":
        raise ValueError(f"image_pipeline {path}: need prediction_type epsilon, got "
                         f"{scheduler.config.prediction_type!r}")  # fmt: skip
    return PipelineEps(unet, scheduler.alphas_cumprod).to(device)


def load_preferences(path: str | Path, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A preference file: .npz with `winners` and `losers`, equal shapes (n, 3, size, size),
    float in [-1, 1] or uint8 in [0, 255] (mapped to [-1, 1]); returns flattened (x_w, x_l)."""
    path = Path(path)
    try:
        with np.load(path) as data:
            arrays = [data[k] for k in ("winners", "losers")]
    except (OSError, KeyError, ValueError) as err:
        raise ValueError(f"image_preferences {path}: need an .npz with arrays 'winners' and "
                         f"'losers' ({err})") from err  # fmt: skip
    out = []
    for name, a in zip(("winners", "losers"), arrays):
        if a.ndim != 4 or a.shape[1:] != (CHANNELS, size, size) or a.shape[0] < 2:
            raise ValueError(f"image_preferences {path}: '{name}' must have shape "
                             f"(n >= 2, 3, {size}, {size}), got {a.shape}")  # fmt: skip
        x = torch.from_numpy(a.astype(np.float32))
        x = x / 127.5 - 1 if a.dtype == np.uint8 else x
        if not torch.isfinite(x).all() or x.abs().max() > 1 + 1e-6:
            raise ValueError(f"image_preferences {path}: '{name}' must be finite floats in "
                             "[-1, 1] or uint8")  # fmt: skip
        out.append(x.reshape(x.shape[0], -1))
    if out[0].shape != out[1].shape:
        raise ValueError(f"image_preferences {path}: winners {tuple(arrays[0].shape)} and "
                         f"losers {tuple(arrays[1].shape)} differ")  # fmt: skip
    return out[0], out[1]


class FeatureMap:
    """phi(x): the pretrained UNet's activations (its input convolution, every down block and
    the mid block), each averaged over space, read at OU time t_feature on the flattened image
    itself (deterministic), standardised with the statistics of `fit_on`. It is no nn.Module:
    a Potential using it trains only its head. The last input's features are cached, so a
    potential fitted for many steps on one batch runs the UNet once."""

    def __init__(self, model: nn.Module, t_feature: float, fit_on: torch.Tensor):
        self.model, self.t_feature = model, t_feature
        self.mean, self.std = 0.0, 1.0
        self._last: tuple[torch.Tensor, torch.Tensor] | None = None
        raw = self(fit_on)
        self.mean, self.std = raw.mean(0), raw.std(0).clamp_min(1e-6)
        self.dim, self._last = raw.shape[1], None

    def __deepcopy__(self, memo):  # a copied potential shares the frozen map
        return self

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self._last is not None and self._last[0] is x:
            return self._last[1]
        unet, chunk = self.model.unet, getattr(self.model, "chunk", 4096)
        blocks = [unet.conv_in, *unet.down_blocks, unet.mid_block]
        parts = []
        for i in range(0, x.shape[0], chunk):
            pooled: list[torch.Tensor] = []
            hooks = [b.register_forward_hook(functools.partial(_pool_into, pooled)) for b in blocks]
            try:
                with torch.no_grad():
                    xi = x[i : i + chunk]
                    self.model(xi, torch.full((xi.shape[0],), self.t_feature, device=x.device))
            finally:
                for h in hooks:
                    h.remove()
            parts.append(torch.cat(pooled, dim=1))
        phi = (torch.cat(parts) - self.mean) / self.std
        self._last = (x, phi)
        return phi


def _pool_into(store: list, module, inputs, output) -> None:
    """Forward hook: the block's main output averaged over its spatial dimensions."""
    hidden = output[0] if isinstance(output, tuple) else output
    store.append(hidden.mean(dim=(-2, -1)))


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


def ranking_accuracy(f, x_w: torch.Tensor, x_l: torch.Tensor) -> dict[str, float]:
    """Fraction of pairs the potential ranks like the label, f(winner) < f(loser) (a tie counts
    one half), with its 95% normal (binomial) interval over pairs under "_low" / "_high"."""
    with torch.no_grad():
        fw, fl = f(x_w), f(x_l)
    acc = float(((fw < fl).float() + 0.5 * (fw == fl).float()).mean())
    half = 1.96 * math.sqrt(max(acc * (1 - acc), 1e-12) / x_w.shape[0])
    return {"": acc, "_low": acc - half, "_high": acc + half}


def split_pairs(n: int, g: torch.Generator, train_fraction: float = 0.8):
    """Disjoint random (train, held-out) indices of n >= 2 pairs; both parts non-empty."""
    n_train = min(max(1, int(train_fraction * n)), n - 1)
    order = torch.randperm(n, generator=g)
    return order[:n_train], order[n_train:]


def fit_reward_model(
    features: FeatureMap, x_w: torch.Tensor, x_l: torch.Tensor, steps: int, g: torch.Generator
):
    """Bradley-Terry reward r(x) = w . phi(x) + b on a preference file's pairs (logistic loss
    on r(winner) - r(loser), a little weight decay); returns r as a function of images."""
    head = nn.Linear(features.dim, 1).to(x_w.device)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2, weight_decay=1e-3)
    phi_w, phi_l = features(x_w), features(x_l)
    for _ in range(steps):
        idx = torch.randint(0, x_w.shape[0], (min(256, x_w.shape[0]),), generator=g)
        opt.zero_grad()
        margin = (head(phi_w[idx]) - head(phi_l[idx])).squeeze(-1)
        nn.functional.softplus(-margin).mean().backward()
        opt.step()
    head.requires_grad_(False)

    def reward(x: torch.Tensor) -> torch.Tensor:
        return head(features(x)).squeeze(-1)

    return reward


def _reference_model(cfg: Config, dim: int, g: torch.Generator, device) -> nn.Module:
    """The pretrained pipeline's UNet (image_pipeline) or a UNet trained here from scratch."""
    if cfg.image_pipeline:
        return load_pipeline(cfg.image_pipeline, cfg.image_size, device).eval()
    unet = UNetEps(cfg.image_size, cfg.image_channels, cfg.t_max).to(device)
    baselines.train_dsm(
        lambda n: coloured_shapes(n, cfg.image_size, g).reshape(n, dim), cfg.image_train_steps,
        cfg.image_batch, cfg.dsm_lr, cfg.t_min, cfg.t_max, g, model=unet,
    )  # fmt: skip
    return unet.eval()


def run_images(cfg: Config, workdir: Path, g: torch.Generator) -> dict[str, float]:
    """Align the image model (a local pipeline, or a UNet trained here) with DDO and the
    baselines; metrics "Images: <m>/<k>".

    Preferences come from the Bradley-Terry colour oracle, or (image_preferences) from a file of
    pairs: then a Bradley-Terry reward model on the UNet's features, fitted on 80% of the file,
    is DA's oracle, Diffusion-DPO trains on the same 80%, and the other 20% are the held-out
    pairs. One pool of 2 x image_ref reference images serves every loop of DA (its two halves
    are the regression inputs and the inner expectation's x') and the importance-resampling
    pool, so the UNet's reverse SDE runs once for all of them.
    """
    device = torch.device(cfg.device)
    size = cfg.image_size
    dim = CHANNELS * size * size
    unet = _reference_model(cfg, dim, g, device)
    times = time_grid(cfg.t_max, cfg.t_min, cfg.image_sde_steps)
    sample_ref = _sampler(unet.score, dim, times, g, device)
    pool = sample_ref(2 * cfg.image_ref)
    halves = (pool[: cfg.image_ref], pool[cfg.image_ref :])
    features = FeatureMap(unet, cfg.image_feature_t, pool)
    metrics: dict[str, float] = {}
    if cfg.image_preferences:
        file_w, file_l = (x.to(device) for x in load_preferences(cfg.image_preferences, size))
        train, held = (i.to(device) for i in split_pairs(file_w.shape[0], g))
        reward_fn = fit_reward_model(features, file_w[train], file_l[train], cfg.fit_steps, g)
        x_w, x_l, held_w, held_l = file_w[train], file_l[train], file_w[held], file_l[held]
        for suffix, v in ranking_accuracy(lambda x: -reward_fn(x), held_w, held_l).items():
            metrics[f"Images: Reward model/ranking_accuracy{suffix}"] = v
    else:
        reward_fn = functools.partial(colour_reward, temperature=cfg.image_temperature)
        x_w, x_l = _pairs(*halves, reward_fn, g)
        held_w, held_l = _pairs(sample_ref(cfg.image_samples), sample_ref(cfg.image_samples),
                                reward_fn, g)  # fmt: skip
    calls = itertools.count()

    def from_pool(n: int) -> torch.Tensor:  # alternate halves: x and x' always differ
        return halves[next(calls) % 2][:n]

    def run_da(feature_map):
        return dual_averaging(
            cfg.objective, from_pool, reward_fn, cfg.da_loops, cfg.image_ref, cfg.beta,
            cfg.beta_prime, cfg.beta_d, cfg.fit_steps, cfg.image_fit_lr, cfg.hidden,
            cfg.da_schedule, device=device, features=feature_map,
        )  # fmt: skip

    by_kind = {"features": run_da(features), "pixels": run_da(None)}
    potentials = by_kind[cfg.image_potential]
    f = potentials[-1]
    for kind, pots in by_kind.items():
        for suffix, v in ranking_accuracy(pots[-1], held_w, held_l).items():
            metrics[f"Images: DDO/ranking_accuracy_{kind}_potential{suffix}"] = v
    for suffix, v in ranking_accuracy(f, held_w, held_l).items():
        metrics[f"Images: DDO/ranking_accuracy{suffix}"] = v
    flip = (torch.rand(held_w.shape[0], generator=g) < 0.5).to(device)[:, None]
    coin_w, coin_l = torch.where(flip, held_l, held_w), torch.where(flip, held_w, held_l)
    for suffix, v in ranking_accuracy(f, coin_w, coin_l).items():
        metrics[f"Images: DDO/ranking_accuracy_random_labels{suffix}"] = v
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
    ddpo = baselines.diffusion_dpo(
        unet, x_w, x_l, cfg.image_dpo_steps, cfg.image_batch, cfg.ddpo_lr, cfg.image_ddpo_beta,
        cfg.t_min, cfg.t_max, g,
    )  # fmt: skip
    samples["Diffusion-DPO"] = _sampler(ddpo.score, dim, times, g, device)(cfg.image_samples)
    metrics["Images: Importance resampling/ess"] = ess
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
