"""Evaluation by grid quadrature in 2-D: the optimum q_hat, L(q) of potentials and of samples.

The true objective L(q) = F(q) + beta KL(q || p_ref) is evaluated on a grid that covers the
reference's mass. For a sampler we only have samples, so its density is estimated by a per-mode
Gaussian fit (the modes are well separated and near-Gaussian), mixed with 0.1% of p_ref so that
rho = log(q / p_ref) stays finite; every method goes through the same estimator.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import ot
import torch

from .objectives import discrete_objective, preference_prob
from .reference import Mixture, mode_index


@dataclasses.dataclass(frozen=True)
class Grid:
    """Grid points with non-negligible reference mass, their reference weights and rewards."""

    x: torch.Tensor  # (n, 2) float64
    p: torch.Tensor  # (n,) reference weights, sum 1
    r: torch.Tensor  # (n,) oracle rewards
    step: float


def make_grid(mix: Mixture, reward_fn, step: float, min_mass: float = 1e-9) -> Grid:
    """Cell centres on a square around the mixture, keeping cells above `min_mass`."""
    half = float(mix.means.abs().max()) + 5 * mix.sigma
    axis = torch.arange(-half, half + 1e-9, step, dtype=torch.float64)
    xx = torch.cartesian_prod(axis, axis)
    log_p = mix.log_prob(xx.float()).double() + 2 * np.log(step)
    keep = log_p.exp() > min_mass
    p = torch.softmax(log_p[keep], 0)
    return Grid(xx[keep], p, reward_fn(xx[keep]).double(), step)


def optimal_distribution(
    grid: Grid, kind: str, beta: float, beta_d: float, iters: int = 150
) -> torch.Tensor:
    """q_hat = argmin L(q) on the grid, by L-BFGS over log(q / p_ref) started from p_ref."""
    pref = preference_prob(grid.r[:, None], grid.r[None, :]) if kind == "dpo" else None
    rho = torch.zeros_like(grid.p, requires_grad=True)
    opt = torch.optim.LBFGS(
        [rho], max_iter=iters, tolerance_grad=1e-10, line_search_fn="strong_wolfe"
    )

    def closure():
        opt.zero_grad()
        q = torch.softmax(torch.log(grid.p) + rho, 0)
        loss = discrete_objective(kind, q, grid.p, grid.r, beta, beta_d, pref)
        loss.backward()
        return loss

    opt.step(closure)
    return torch.softmax(torch.log(grid.p) + rho.detach(), 0)


def objective(grid: Grid, q: torch.Tensor, kind: str, beta: float, beta_d: float) -> float:
    return float(discrete_objective(kind, q, grid.p, grid.r, beta, beta_d))


def potential_distribution(grid: Grid, potential) -> torch.Tensor:
    """q_f ~ p_ref e^{-f} on the grid."""
    with torch.no_grad():
        f = potential(grid.x.float()).double()
    return torch.softmax(torch.log(grid.p) - f, 0)


def sample_distribution(grid: Grid, mix: Mixture, x: torch.Tensor, floor: float = 1e-3):
    """Density of samples on the grid: per-mode Gaussian fit, mixed with `floor` of p_ref."""
    x = x.double()
    modes = mode_index(mix, x)
    log_q = torch.full((grid.x.shape[0], mix.means.shape[0]), -torch.inf, dtype=torch.float64)
    for k in range(mix.means.shape[0]):
        xk = x[modes == k]
        if xk.shape[0] < 3:
            continue
        mean = xk.mean(0)
        cov = torch.cov(xk.T) + 1e-4 * torch.eye(2, dtype=torch.float64)
        dist = torch.distributions.MultivariateNormal(mean, cov)
        log_q[:, k] = dist.log_prob(grid.x) + np.log(xk.shape[0] / x.shape[0])
    q = torch.softmax(torch.logsumexp(log_q, 1) + 2 * np.log(grid.step), 0)
    return (1 - floor) * q + floor * grid.p


def mode_weights_grid(grid: Grid, mix: Mixture, q: torch.Tensor) -> torch.Tensor:
    modes = mode_index(mix, grid.x)
    return torch.zeros(mix.means.shape[0], dtype=torch.float64).index_add_(0, modes, q)


def mode_weights_samples(mix: Mixture, x: torch.Tensor) -> torch.Tensor:
    counts = torch.bincount(mode_index(mix, x), minlength=mix.means.shape[0]).double()
    return counts / counts.sum()


def total_variation(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(0.5 * (a - b).abs().sum())


def sample_grid(grid: Grid, q: torch.Tensor, n: int, g: torch.Generator) -> torch.Tensor:
    """Draws from the grid distribution q, jittered uniformly inside each cell."""
    idx = torch.multinomial(q, n, replacement=True, generator=g)
    jitter = (torch.rand(n, 2, generator=g, dtype=torch.float64) - 0.5) * grid.step
    return grid.x[idx] + jitter


def wasserstein2(x: torch.Tensor, y: torch.Tensor) -> float:
    """Exact W2 between two equal-weight empirical measures (POT's network simplex)."""
    xn, yn = x.double().numpy(), y.double().numpy()
    cost = ot.dist(xn, yn)
    return float(np.sqrt(ot.emd2(ot.unif(len(xn)), ot.unif(len(yn)), cost)))
