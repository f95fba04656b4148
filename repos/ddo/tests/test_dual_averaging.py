"""Dual averaging: the linear (RLHF) fixed point in one loop, L(q_k) falling, score matching."""

from __future__ import annotations

import itertools

import torch

from ddo import baselines, evaluation
from ddo.dual_averaging import dual_averaging
from ddo.objectives import reward
from ddo.reference import linear_tilt, marginal_score, ou_coefficients, ring_mixture

MIX = ring_mixture(6, 4.0, 0.3)


def test_linear_reward_reaches_the_gibbs_tilt_after_one_loop():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    c, beta = torch.tensor([1.0, 0.5]), 2.0
    pots = dual_averaging(
        "rlhf", lambda n: MIX.sample(n, g), lambda x: x @ c, 1, 2048, beta, 0.0, 1.0, 300, 0.01
    )
    x = MIX.sample(1000, g)
    with torch.no_grad():
        err = pots[1](x) - (-(x @ c) / beta)
    assert (err - err.mean()).abs().max() < 0.1  # f_1 = -r / beta up to a constant
    grid = evaluation.make_grid(MIX, lambda z: z @ c.double(), 0.2)
    q1 = evaluation.potential_distribution(grid, pots[1])
    exact = linear_tilt(MIX, c / beta).weights.double()
    assert evaluation.total_variation(evaluation.mode_weights_grid(grid, MIX, q1), exact) < 0.02


def test_dpo_objective_falls_over_loops():
    torch.manual_seed(1)
    g = torch.Generator().manual_seed(1)
    reward_fn = lambda x: reward(x, MIX.means[0], 1.0)
    pots = dual_averaging(
        "dpo", lambda n: MIX.sample(n, g), reward_fn, 3, 1024, 1.0, 1.0, 1.0, 150, 0.01
    )
    grid = evaluation.make_grid(MIX, reward_fn, 0.3)
    curve = [
        evaluation.objective(grid, evaluation.potential_distribution(grid, f), "dpo", 1.0, 1.0)
        for f in pots
    ]
    assert all(b < a + 0.005 for a, b in itertools.pairwise(curve)) and curve[-1] < curve[0] - 0.01


def test_score_matching_error_stays_below_bound():
    torch.manual_seed(2)
    g = torch.Generator().manual_seed(2)
    net = baselines.train_dsm(lambda n: MIX.sample(n, g), 400, 256, 0.003, 1e-3, 5.0, g, 64)
    errors, scale = [], []
    for t in (0.05, 0.3, 1.0, 3.0):
        v = ou_coefficients(t)[1]
        a = ou_coefficients(t)[0]
        xt = a * MIX.sample(2000, g) + v.sqrt() * torch.randn(2000, 2, generator=g)
        t_vec = torch.full((2000,), t)
        true = marginal_score(MIX, xt, t)
        errors.append(float((v * ((net.score(xt, t_vec) - true) ** 2).sum(-1)).mean()))
        scale.append(float((v * (true**2).sum(-1)).mean()))
    # the v_t-weighted L2 error (the DSM loss minus its floor) is a small part of the score's size
    assert sum(errors) < 0.2 * sum(scale)
