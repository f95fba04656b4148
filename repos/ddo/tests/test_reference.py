"""Closed forms of the mixture reference and of the h-transform (exact mode)."""

from __future__ import annotations

import torch

from ddo.h_transform import effective_sample_size, h_transform_sample, mc_correction, time_grid
from ddo.reference import (
    linear_log_h,
    linear_tilt,
    marginal_log_prob,
    marginal_score,
    ring_mixture,
    sample_posterior,
)

MIX = ring_mixture(6, 4.0, 0.3)
C = torch.tensor([0.8, -0.3])  # linear potential f(x) = -C . x, i.e. r = beta C . x


def test_marginal_score_is_gradient_of_log_density():
    x = torch.randn(50, 2) * 3
    for t in (0.01, 0.3, 2.0):
        xg = x.clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(marginal_log_prob(MIX, xg, t).sum(), xg)
        assert torch.allclose(marginal_score(MIX, x, t), grad, atol=1e-4)


def test_exact_h_corrected_score_equals_tilted_score_on_grid():
    axis = torch.linspace(-5, 5, 21)
    x = torch.cartesian_prod(axis, axis)
    tilted = linear_tilt(MIX, C)
    for t in (0.02, 0.5, 2.0):
        xg = x.clone().requires_grad_(True)
        (grad_log_h,) = torch.autograd.grad(linear_log_h(MIX, C, xg, t).sum(), xg)
        corrected = marginal_score(MIX, x, t) + grad_log_h
        assert torch.allclose(corrected, marginal_score(tilted, x, t), atol=1e-3, rtol=1e-3)


def test_mc_correction_is_unbiased_and_consistent():
    g = torch.Generator().manual_seed(0)
    x = torch.tensor([[3.0, 1.0], [-2.0, 3.0], [0.5, -0.5]])
    t = 0.7
    # h_t(x) = E[e^{-f(X_0)} | x] estimated by plain averages: mean over repeats is unbiased.
    x0 = sample_posterior(MIX, x, t, 20000, g)
    h_mc = torch.exp(x0 @ C).mean(1)
    h_exact = linear_log_h(MIX, C, x, t).exp()
    stderr = torch.exp(x0 @ C).std(1) / 20000**0.5
    assert ((h_mc - h_exact).abs() < 4 * stderr).all()
    # the self-normalised correction converges to grad log h_t
    xg = x.clone().requires_grad_(True)
    (exact,) = torch.autograd.grad(linear_log_h(MIX, C, xg, t).sum(), xg)
    corr = mc_correction(lambda z: -(z @ C), x, t, x0)
    assert torch.allclose(corr, exact, atol=0.05)


def test_sampler_matches_closed_form_tilted_mixture():
    g = torch.Generator().manual_seed(1)
    tilted = linear_tilt(MIX, C)
    x = h_transform_sample(
        lambda z, t: marginal_score(MIX, z, t),
        lambda z, t, m: sample_posterior(MIX, z, t, m, g),
        lambda z: -(z @ C), 2000, 2, time_grid(5.0, 1e-3, 60), 64, g,
    )  # fmt: skip
    modes = torch.cdist(x, MIX.means).argmin(1)
    weights = torch.bincount(modes, minlength=6).float() / len(x)
    assert 0.5 * (weights - tilted.weights).abs().sum() < 0.05
    assert (x.mean(0) - tilted.weights @ tilted.means).norm() < 0.15
    for k in range(6):  # each component's mean moved to mu_k + sigma^2 c
        if weights[k] > 0.05:
            assert (x[modes == k].mean(0) - tilted.means[k]).norm() < 0.1


def test_effective_sample_size_matches_direct_formula():
    logw = torch.randn(100, dtype=torch.float64) * 2
    w = logw.exp()
    assert torch.isclose(effective_sample_size(logw), w.sum() ** 2 / (w**2).sum())
    assert float(effective_sample_size(torch.tensor([0.0, -torch.inf, -torch.inf]))) == 1.0
