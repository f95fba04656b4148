"""Data: parameter sweeps with held-out bifurcation bands, simulated trajectories, corruption.

Everything is a deterministic function of the seed. The Brusselator test set is the band of
width `band` around the Turing and Hopf lines, which training never sees (the official data
script's `ParameterGenerator(epsilon, curve_func)`).
"""

from __future__ import annotations

import torch

from . import pde
from .config import Config


def in_band(theta: torch.Tensor, cfg: Config) -> torch.Tensor:
    """True where (A, B) lies within `band` of the Turing or the Hopf line."""
    a, b = theta[:, 0], theta[:, 1]
    near_t = (b - pde.turing_line(a, cfg.diffusion)).abs() < cfg.band
    near_h = (b - pde.hopf_line(a)).abs() < cfg.band
    return near_t | near_h


def sample_parameters(cfg: Config, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw (train, test) parameters uniformly in the box; Brusselator test = held-out bands."""
    low, high = torch.tensor(cfg.param_low), torch.tensor(cfg.param_high)
    train, test = [], []
    while sum(map(len, train)) < cfg.n_train or sum(map(len, test)) < cfg.n_test:
        theta = low + (high - low) * torch.rand(4 * (cfg.n_train + cfg.n_test), 2, generator=gen)
        if cfg.system == "brusselator":
            theta = theta[theta[:, 1] <= pde.hopf_line(theta[:, 0]) + cfg.b_over_hopf]
            held = in_band(theta, cfg)
            train.append(theta[~held])
            test.append(theta[held])
        else:
            train.append(theta[: cfg.n_train])
            test.append(theta[cfg.n_train :])
    return torch.cat(train)[: cfg.n_train], torch.cat(test)[: cfg.n_test]


def initial_fields(cfg: Config, theta: torch.Tensor, gen: torch.Generator):
    """Homogeneous steady state plus Gaussian noise of size init_noise (Gray-Scott: |noise| on v)."""
    u_star, v_star = pde.homogeneous_state(cfg.system, theta)
    shape = (len(theta), cfg.grid, cfg.grid)
    du = cfg.init_noise * torch.randn(shape, generator=gen)
    dv = cfg.init_noise * torch.randn(shape, generator=gen)
    if cfg.system == "gray-scott":
        dv = dv.abs()
    return u_star[:, None, None] + du, v_star[:, None, None] + dv


def simulate_batch(cfg: Config, theta: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Trajectories (batch, n_frames, 2, grid, grid) for parameters theta."""
    u0, v0 = initial_fields(cfg, theta, gen)
    dev = cfg.device
    return pde.simulate(
        cfg.system,
        theta.to(dev),
        u0.to(dev),
        v0.to(dev),
        diffusion=cfg.diffusion,
        dx=cfg.dx,
        dt=cfg.dt,
        t_end=cfg.t_end,
        n_frames=cfg.n_frames,
    ).cpu()


def add_noise(fields: torch.Tensor, sigma: float, gen: torch.Generator) -> torch.Tensor:
    """Additive Gaussian noise, sigma relative to each channel's standard deviation over the set."""
    scale = fields.transpose(0, 2).flatten(1).std(1).view(1, 1, -1, 1, 1)
    return fields + sigma * scale * torch.randn(fields.shape, generator=gen)


def add_patches(fields: torch.Tensor, fraction: float, gen: torch.Generator) -> torch.Tensor:
    """Occlude one random square patch covering `fraction` of each frame with zeros."""
    n = fields.shape[-1]
    side = max(1, round(n * fraction**0.5))
    out = fields.clone()
    corners = torch.randint(0, n - side + 1, (*fields.shape[:2], 2), generator=gen)
    for i, j in torch.cartesian_prod(torch.arange(fields.shape[0]), torch.arange(fields.shape[1])):
        r, c = corners[i, j].tolist()
        out[i, j, :, r : r + side, c : c + side] = 0.0
    return out


def simulated_regime(traj: torch.Tensor, threshold: float) -> torch.Tensor:
    """Regime each clean trajectory (batch, frames, 2, n, n) actually shows: 0 homogeneous,
    1 stationary pattern, 2 oscillating spatial mean.

    Pattern: the final spatial standard deviation of u exceeds `threshold` (the initial noise, so
    the perturbation grew). Oscillation: the spatial mean of u varies by more than `threshold`
    (standard deviation) over the last quarter of the frames. The official code labels true final
    patterns with k-means; thresholds keep the labels' meaning fixed.
    """
    pattern = traj[:, -1, 0].flatten(1).std(1) > threshold
    tail = traj[:, -max(2, traj.shape[1] // 4) :, 0].mean((-1, -2))
    oscillating = tail.std(1) > threshold
    return torch.where(oscillating, 2, pattern.long())


def make_dataset(cfg: Config) -> dict[str, torch.Tensor]:
    """Train and test parameters, clean trajectories and regime labels for cfg.seed.

    Labels are read from the simulation (`simulated_regime`), not from the closed-form linear
    stability of the homogeneous state: with D_v/D_u = 8 the Turing pattern outgrows the Hopf
    oscillation, and just above the Turing line the pattern has not formed by t_end.
    """
    gen = torch.Generator().manual_seed(cfg.seed)
    theta_train, theta_test = sample_parameters(cfg, gen)
    data = {
        "theta_train": theta_train,
        "theta_test": theta_test,
        "train": simulate_batch(cfg, theta_train, gen),
        "test": simulate_batch(cfg, theta_test, gen),
    }
    if cfg.system == "brusselator":
        for split in ("train", "test"):
            data[f"regime_{split}"] = simulated_regime(data[split], cfg.init_noise)
    return data
