"""Set scalarizations of a K x m objective matrix (the paper's contribution), pure torch.

F[k, i] = f_i(x^(k)): objective i of solution k. Every function also accepts a batch of
independent matrices (..., K, m) (one per seed) and returns one value per matrix, so that several
seeds train as one tensor program; the seeds never interact because the training loss is the sum
of the per-seed losses. lambda (preference, length m) and z* (ideal point, length m) default to 1
and 0, the official code's values.
"""

from __future__ import annotations

import math

import torch


def logsumexp(x: torch.Tensor, dim: int) -> torch.Tensor:
    """log sum exp along `dim`, shifted by the (gradient-free) maximum as torch.logsumexp is.

    Shifted arguments are clamped at log(smallest normal float) + 1: exp of anything lower is a
    subnormal or zero that cannot change a sum >= 1 (the shifted maximum contributes exp(0)), but
    it takes the slow subnormal path of the CPU's exp (about 10x slower, measured). Values and
    gradients agree with torch.logsumexp to rounding (tests/test_scalarization.py).
    """
    floor = math.log(torch.finfo(x.dtype).tiny) + 1.0
    peak = x.detach().amax(dim=dim, keepdim=True)
    peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
    shifted = x - peak
    shifted = torch.where(shifted == -math.inf, shifted, shifted.clamp_min(floor))
    return peak.squeeze(dim) + shifted.exp().sum(dim).log()


def check_objectives(
    values: torch.Tensor, pref: torch.Tensor | None = None, ideal: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate a (..., K, m) objective matrix; return (lambda, z*) broadcast to length m.

    Raises ValueError for a matrix that is not at least 2-D, K > m, NaN objectives, a preference
    that is negative or not of length m, or an ideal point not of length m.
    """
    if values.ndim < 2 or values.shape[-2] < 1 or values.shape[-1] < 1:
        raise ValueError(
            f"objectives must be a K x m matrix with K, m >= 1, got {tuple(values.shape)}"
        )
    k, m = values.shape[-2:]
    if k > m:
        raise ValueError(f"K={k} solutions for m={m} objectives: need K <= m (few for many)")
    if torch.isnan(values).any():
        raise ValueError("objectives returned NaN; check the problem or lower the learning rate")
    pref = values.new_ones(m) if pref is None else pref.to(values)
    ideal = values.new_zeros(m) if ideal is None else ideal.to(values)
    if pref.shape != (m,):
        raise ValueError(
            f"preference must have one weight per objective (m={m}), got {tuple(pref.shape)}"
        )
    if (pref < 0).any():
        raise ValueError(f"preference weights must be >= 0, got min {float(pref.min()):.3g}")
    if ideal.shape != (m,):
        raise ValueError(f"ideal point must have length m={m}, got {tuple(ideal.shape)}")
    return pref, ideal


def check_mu(mu: float) -> None:
    if not (isinstance(mu, int | float) and math.isfinite(mu) and mu > 0):
        raise ValueError(f"smoothing parameter mu must be a finite number > 0, got {mu!r}")


def tch_set(
    values: torch.Tensor, pref: torch.Tensor | None = None, ideal: torch.Tensor | None = None
) -> torch.Tensor:
    """TCH-Set: max_i lambda_i (min_k f_i(x^(k)) - z*_i)."""
    pref, ideal = check_objectives(values, pref, ideal)
    return (pref * (values.amin(dim=-2) - ideal)).amax(dim=-1)


def soft_min_over_solutions(values: torch.Tensor, mu: float) -> torch.Tensor:
    """Smooth min_k (inner level of STCH-Set): -mu log sum_k exp(-f_i(x^(k)) / mu), one value per i."""
    return -mu * logsumexp(-values / mu, dim=-2)


def stch_set(
    values: torch.Tensor,
    mu: float,
    pref: torch.Tensor | None = None,
    ideal: torch.Tensor | None = None,
) -> torch.Tensor:
    """STCH-Set: mu log sum_i exp(lambda_i (softmin_k f_i(x^(k)) - z*_i) / mu).

    Both non-smooth operators of TCH-Set are replaced by log-sum-exp with the same mu, so
    TCH - mu log K <= STCH-Set <= TCH + mu log m (the paper's smoothing bound, lambda = 1).
    """
    check_mu(mu)
    pref, ideal = check_objectives(values, pref, ideal)
    inner = soft_min_over_solutions(values - ideal, mu)
    return mu * logsumexp(pref * inner / mu, dim=-1)


def sum_of_minimum(values: torch.Tensor) -> torch.Tensor:
    """Sum-of-minimum (SoM) baseline, as the official code: mean_i min_k f_i(x^(k))."""
    check_objectives(values)
    return values.amin(dim=-2).mean(dim=-1)


def worst_case(values: torch.Tensor) -> torch.Tensor:
    """Evaluation metric: max_i min_k f_i(x^(k)), one value per (K, m) matrix."""
    return values.amin(dim=-2).amax(dim=-1)


def average_case(values: torch.Tensor) -> torch.Tensor:
    """Evaluation metric: mean_i min_k f_i(x^(k)), one value per (K, m) matrix."""
    return values.amin(dim=-2).mean(dim=-1)
