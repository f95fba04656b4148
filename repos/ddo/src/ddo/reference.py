"""The reference model: a 2-D Gaussian mixture diffused by an Ornstein-Uhlenbeck process.

Forward process (the paper's Sec. 2 setting): dX = -X dt + sqrt(2) dW, so that
X_t = a_t X_0 + sqrt(v_t) xi with a_t = e^{-t} and v_t = 1 - e^{-2t}.
For an isotropic mixture sum_k pi_k N(mu_k, sigma^2 I) every quantity the h-transform needs is
closed form: the marginal score, the posterior p(x_0 | x_t) (again a mixture), and, for a linear
potential, h_t itself. These are the "exact mode" of the sampler and the oracles of the tests.
"""

from __future__ import annotations

import dataclasses
import math

import torch


@dataclasses.dataclass(frozen=True)
class Mixture:
    """Isotropic Gaussian mixture: means (K, d), weights (K,), common standard deviation."""

    means: torch.Tensor
    weights: torch.Tensor
    sigma: float

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        return marginal_log_prob(self, x, t=0.0)

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        k = torch.multinomial(self.weights, n, replacement=True, generator=generator)
        noise = torch.randn(n, self.means.shape[1], generator=generator, dtype=self.means.dtype)
        return self.means[k] + self.sigma * noise


def ring_mixture(n_modes: int, radius: float, sigma: float) -> Mixture:
    """The toy reference: `n_modes` equal-weight components on a circle."""
    angle = 2 * math.pi * torch.arange(n_modes, dtype=torch.float32) / n_modes
    means = radius * torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
    return Mixture(means, torch.full((n_modes,), 1.0 / n_modes), sigma)


def ou_coefficients(t: float | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """a_t = e^{-t} and v_t = 1 - e^{-2t} of the OU transition X_t | X_0."""
    t = torch.as_tensor(t, dtype=torch.float32)
    return torch.exp(-t), -torch.expm1(-2 * t)


def _component_terms(mix: Mixture, x: torch.Tensor, t: float | torch.Tensor):
    """Per-component log densities of p_t and the shared variance of p_t's components."""
    a, v = ou_coefficients(t)
    a, v = _col(a, x), _col(v, x)
    var = a**2 * mix.sigma**2 + v  # (n, 1)
    diff = x[:, None, :] - a[:, :, None] * mix.means[None]  # (n, K, d)
    d = x.shape[1]
    logn = -0.5 * (diff**2).sum(-1) / var - 0.5 * d * torch.log(2 * math.pi * var)
    return logn + torch.log(mix.weights)[None], diff, var, a, v


def _col(value: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Broadcast a scalar or per-row time coefficient to shape (n, 1)."""
    return value.to(x.dtype).reshape(-1, 1).expand(x.shape[0], 1)


def marginal_log_prob(mix: Mixture, x: torch.Tensor, t: float | torch.Tensor) -> torch.Tensor:
    """log p_t(x) of the OU-diffused mixture."""
    logc, *_ = _component_terms(mix, x, t)
    return torch.logsumexp(logc, dim=1)


def marginal_score(mix: Mixture, x: torch.Tensor, t: float | torch.Tensor) -> torch.Tensor:
    """grad log p_t(x), closed form: sum_k r_k(x) (a_t mu_k - x) / var_t."""
    logc, diff, var, _, _ = _component_terms(mix, x, t)
    resp = torch.softmax(logc, dim=1)
    return -(resp[:, :, None] * diff).sum(1) / var


def posterior(mix: Mixture, x: torch.Tensor, t: float | torch.Tensor):
    """p(x_0 | x_t = x) as a mixture: log responsibilities (n, K), means (n, K, d), std (n, 1)."""
    logc, _, _, a, v = _component_terms(mix, x, t)
    s2 = 1.0 / (1.0 / mix.sigma**2 + a**2 / v)  # (n, 1)
    means = s2[:, :, None] * (mix.means[None] / mix.sigma**2 + (a / v)[:, :, None] * x[:, None])
    return torch.log_softmax(logc, dim=1), means, s2.sqrt()


def sample_posterior(
    mix: Mixture, x: torch.Tensor, t: float | torch.Tensor, m: int, generator: torch.Generator
) -> torch.Tensor:
    """m exact draws of X_0 | X_t = x for every row of x: shape (n, m, d)."""
    log_resp, means, std = posterior(mix, x, t)
    k = torch.multinomial(log_resp.exp(), m, replacement=True, generator=generator)  # (n, m)
    chosen = torch.gather(means, 1, k[:, :, None].expand(-1, -1, x.shape[1]))
    noise = torch.randn(chosen.shape, generator=generator, dtype=x.dtype)
    return chosen + std[:, :, None] * noise


def linear_log_h(mix: Mixture, c: torch.Tensor, x: torch.Tensor, t: float) -> torch.Tensor:
    """log h_t(x) = log E[exp(c . X_0) | X_t = x] for the linear potential f(x) = -c . x."""
    log_resp, means, std = posterior(mix, x, t)
    log_mgf = means @ c + 0.5 * std**2 * (c @ c)  # (n, K)
    return torch.logsumexp(log_resp + log_mgf, dim=1)


def linear_tilt(mix: Mixture, c: torch.Tensor) -> Mixture:
    """Closed form of p_ref * exp(c . x) / Z: means mu_k + sigma^2 c, weights ~ pi_k e^{c . mu_k}.

    The brief's general form has the factor exp(c^T Sigma_k c / 2) as well; with a common
    isotropic Sigma_k it is the same for every component and cancels in the normalisation.
    """
    logw = torch.log(mix.weights) + mix.means @ c
    return Mixture(mix.means + mix.sigma**2 * c, torch.softmax(logw, 0), mix.sigma)


def mode_index(mix: Mixture, x: torch.Tensor) -> torch.Tensor:
    """Index of the nearest component mean (the mode a sample belongs to)."""
    return torch.cdist(x, mix.means.to(x.dtype)).argmin(1)
