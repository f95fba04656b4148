"""First variations against finite differences and Monte Carlo; the grid optimum in closed form."""

from __future__ import annotations

import pytest
import torch

from ddo import evaluation
from ddo.objectives import discrete_F, discrete_first_variation, first_variation_mc
from ddo.reference import ring_mixture


@pytest.mark.parametrize("kind", ["dpo", "kto", "rlhf"])
def test_first_variation_equals_finite_differences(kind):
    g = torch.Generator().manual_seed(0)
    n = 12
    p = torch.softmax(torch.randn(n, generator=g, dtype=torch.float64), 0)
    q = torch.softmax(torch.randn(n, generator=g, dtype=torch.float64), 0)
    r = torch.randn(n, generator=g, dtype=torch.float64)
    grad = discrete_first_variation(kind, q, p, r, beta_d=1.5)
    eps = 1e-6
    for i, j in [(0, 1), (3, 7), (11, 5)]:
        e = torch.zeros(n, dtype=torch.float64)
        e[i], e[j] = 1.0, -1.0  # a direction that keeps total mass
        fd = (
            discrete_F(kind, q + eps * e, p, r, 1.5) - discrete_F(kind, q - eps * e, p, r, 1.5)
        ) / (2 * eps)
        assert abs(float(fd) - float(grad[i] - grad[j])) < 1e-6


@pytest.mark.parametrize("kind", ["dpo", "kto"])
def test_monte_carlo_first_variation_matches_discrete(kind):
    g = torch.Generator().manual_seed(1)
    n = 8
    p = torch.softmax(torch.randn(n, generator=g, dtype=torch.float64), 0)
    f = torch.randn(n, generator=g, dtype=torch.float64)  # potential: q ~ p e^{-f}
    q = torch.softmax(torch.log(p) - f, 0)
    r = torch.randn(n, generator=g, dtype=torch.float64)
    idx = torch.multinomial(p, 200000, replacement=True, generator=g)
    mc = first_variation_mc(kind, f, r, f[idx], r[idx], beta_d=1.0)
    exact = discrete_first_variation(kind, q, p, r, beta_d=1.0)
    assert torch.allclose(mc, exact, atol=0.03, rtol=0.03)


def test_grid_optimum_of_rlhf_is_the_gibbs_tilt():
    mix = ring_mixture(6, 4.0, 0.3)
    grid = evaluation.make_grid(mix, lambda x: -(x - mix.means[0].double()).norm(dim=-1), 0.3)
    q_hat = evaluation.optimal_distribution(grid, "rlhf", beta=2.0, beta_d=1.0)
    closed = torch.softmax(torch.log(grid.p) + grid.r / 2.0, 0)
    assert evaluation.total_variation(q_hat, closed) < 1e-3
