"""Set scalarizations of a K x m objective matrix (the paper's contribution), pure torch.

F[k, i] = f_i(x^(k)): objective i of solution k. lambda (preference, length m) and z* (ideal point,
length m) default to 1 and 0, the official code's values. All reductions use torch.logsumexp or
torch.amax/amin, never exp/log by hand.
"""

from __future__ import annotations

import math

import torch


def check_objectives(
    values: torch.Tensor, pref: torch.Tensor | None = None, ideal: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate a K x m objective matrix; return (lambda, z*) broadcast to length m.

    Raises ValueError for a matrix that is not 2-D, K > m, NaN objectives, a preference that is
    negative or not of length m, or an ideal point not of length m.
    """
    if values.ndim != 2 or values.shape[0] < 1 or values.shape[1] < 1:
        raise ValueError(
            f"objectives must be a K x m matrix with K, m >= 1, got {tuple(values.shape)}"
        )
    k, m = values.shape
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
    return (pref * (values.amin(dim=0) - ideal)).amax()


def soft_min_over_solutions(values: torch.Tensor, mu: float) -> torch.Tensor:
    """Smooth min_k (inner level of STCH-Set): -mu log sum_k exp(-f_i(x^(k)) / mu), one value per i."""
    return -mu * torch.logsumexp(-values / mu, dim=0)


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
    return mu * torch.logsumexp(pref * inner / mu, dim=0)


def sum_of_minimum(values: torch.Tensor) -> torch.Tensor:
    """Sum-of-minimum (SoM) baseline, as the official code: mean_i min_k f_i(x^(k))."""
    check_objectives(values)
    return values.amin(dim=0).mean()


def worst_case(values: torch.Tensor) -> float:
    """Evaluation metric: max_i min_k f_i(x^(k))."""
    return float(values.amin(dim=0).amax())


def average_case(values: torch.Tensor) -> float:
    """Evaluation metric: mean_i min_k f_i(x^(k))."""
    return float(values.amin(dim=0).mean())
