"""Phase 2: sampling q ~ p_ref e^{-f} with Doob's h-transform (paper Sec. 5).

With h_t(x) = E[e^{-f(X_0)} | X_t = x] the tilted marginals are q_t ~ p_t h_t, so the reverse SDE
of q uses the score grad log p_t + grad log h_t. Differentiating under the posterior,

    grad log h_t(x) = a_t / v_t * (E_w[X_0 | x] - E[X_0 | x]),   w ~ e^{-f(X_0)},

the e^{-f}-weighted minus the plain posterior mean (a_t = e^{-t}, v_t = 1 - e^{-2t}). Adding the
reference score gives the brief's u = E_w[(a_t X_0 - x) / v_t], the full tilted score. We estimate
both posterior means from the same M posterior draws (self-normalised weights), so the large
factor a_t / v_t multiplies a difference whose noise largely cancels.
Posterior draws are exact for the mixture reference, or come from re-running the reference
reverse SDE from (x, t) (the paper's estimator, used with a learned score).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch

from .reference import ou_coefficients

Score = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x, t) -> grad log p_t(x)


def time_grid(t_max: float, t_min: float, steps: int) -> torch.Tensor:
    """Decreasing times t_max -> t_min, quadratically denser near t_min where the score is sharp."""
    if not 0 < t_min < t_max:
        raise ValueError(f"need 0 < t_min < t_max, got t_min={t_min}, t_max={t_max}")
    u = torch.linspace(1.0, 0.0, steps + 1)
    return t_min + (t_max - t_min) * u**2


def reverse_sde(
    score: Score,
    x: torch.Tensor,
    times: torch.Tensor,
    generator: torch.Generator,
) -> torch.Tensor:
    """Euler-Maruyama for the reverse OU SDE dx = [x + 2 score] dt + sqrt(2) dW, along `times`.

    x has shape (..., d); the time argument handed to `score` has x's leading shape.
    """
    for t_now, t_next in itertools.pairwise(times):
        h = float(t_now - t_next)
        t_vec = torch.full(x.shape[:-1], float(t_now), device=x.device)
        drift = x + 2 * score(x, t_vec)
        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)
        x = x + h * drift + (2 * h) ** 0.5 * noise
    return x


def mc_correction(
    potential: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    t: float,
    x0: torch.Tensor,
) -> torch.Tensor:
    """grad log h_t(x) from posterior draws x0 (n, M, d) of X_0 | X_t = x."""
    a, v = ou_coefficients(t)
    with torch.no_grad():
        logw = -potential(x0.reshape(-1, x0.shape[-1])).reshape(x0.shape[:2])
        w = torch.softmax(logw, dim=1)
    weighted = (w[:, :, None] * x0).sum(1)
    return float(a / v) * (weighted - x0.mean(1))


def effective_sample_size(log_weights: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """(sum w)^2 / sum w^2 computed from log-weights (never divides by zero)."""
    return torch.exp(2 * torch.logsumexp(log_weights, dim) - torch.logsumexp(2 * log_weights, dim))


def h_transform_sample(
    ref_score: Score,
    posterior_draws: Callable[[torch.Tensor, float, int], torch.Tensor],
    potential: Callable[[torch.Tensor], torch.Tensor],
    n: int,
    dim: int,
    times: torch.Tensor,
    m_draws: int,
    generator: torch.Generator,
    device: str | torch.device = "cpu",
) -> torch.Tensor:
    """Sample q ~ p_ref e^{-f} by the reverse SDE with score ref_score + grad log h_t.

    posterior_draws(x, t, M) returns M draws of X_0 | X_t = x per row, shape (n, M, d).
    The sampler starts from the OU stationary law N(0, I), exact up to e^{-t_max}.
    Images are flattened to d = C*H*W; ref_score reshapes them for its network.
    """

    def tilted_score(x: torch.Tensor, t_vec: torch.Tensor) -> torch.Tensor:
        t = float(t_vec.reshape(-1)[0])
        x0 = posterior_draws(x, t, m_draws)
        return ref_score(x, t_vec) + mc_correction(potential, x, t, x0)

    x = torch.randn(n, dim, generator=generator).to(device)
    return reverse_sde(tilted_score, x, times, generator)


def simulated_posterior(
    ref_score: Score, inner_steps: int, t_min: float, generator: torch.Generator
) -> Callable[[torch.Tensor, float, int], torch.Tensor]:
    """Posterior draws by re-running the reference reverse SDE from (x, t) down to t_min."""

    def draws(x: torch.Tensor, t: float, m: int) -> torch.Tensor:
        start = x[:, None, :].expand(-1, m, -1).reshape(-1, x.shape[1])
        if t <= t_min:
            return start.reshape(x.shape[0], m, -1)
        inner = time_grid(t, t_min, inner_steps)
        return reverse_sde(ref_score, start, inner, generator).reshape(x.shape[0], m, -1)

    return draws
