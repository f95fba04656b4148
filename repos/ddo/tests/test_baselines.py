"""Diffusion-DPO against the diffusers training script's formula; DA weights and schedules."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from ddo import baselines, evaluation
from ddo.dual_averaging import da_weights, grid_dual_averaging
from ddo.objectives import reward
from ddo.reference import ou_coefficients, ring_mixture
from ddo.stats import t_interval


def diffusers_dpo_loss(model_pred, ref_pred, target, beta_dpo):
    """Transcribed from diffusers' examples/research_projects/diffusion_dpo/train_diffusion_dpo.py
    (winners stacked above losers; image tensors there, (n, d) here, so mean over dim 1)."""
    model_losses = (model_pred - target).pow(2).mean(dim=1)
    model_losses_w, model_losses_l = model_losses.chunk(2)
    model_diff = model_losses_w - model_losses_l
    ref_losses = (ref_pred - target).pow(2).mean(dim=1)
    ref_losses_w, ref_losses_l = ref_losses.chunk(2)
    ref_diff = ref_losses_w - ref_losses_l
    scale_term = -0.5 * beta_dpo
    inside_term = scale_term * (model_diff - ref_diff)
    return -1 * F.logsigmoid(inside_term).mean()


@pytest.mark.parametrize("beta_dpo", [1.0, 250.0, 2500.0])
def test_diffusion_dpo_loss_equals_the_diffusers_formula(beta_dpo):
    torch.manual_seed(0)
    model, ref = baselines.ScoreNet(2, 16), baselines.ScoreNet(2, 16)
    x_w, x_l = torch.randn(32, 2), torch.randn(32, 2)
    ours = baselines.diffusion_dpo_loss(
        model, ref, x_w, x_l, beta_dpo, 1e-3, 5.0, torch.Generator().manual_seed(3)
    )
    # the same draws of t and eps, shared by each winner and its loser as in the script
    t, eps, _ = baselines._noised(x_w, 1e-3, 5.0, torch.Generator().manual_seed(3))
    t, eps = t.repeat(2), eps.repeat(2, 1)
    a, v = ou_coefficients(t)
    xt = a[:, None] * torch.cat([x_w, x_l]) + v.sqrt()[:, None] * eps
    with torch.no_grad():
        theirs = diffusers_dpo_loss(model(xt, t), ref(xt, t), eps, beta_dpo)
    assert torch.allclose(ours, theirs, atol=1e-6)


def test_diffusion_dpo_loss_is_log_2_at_the_reference_and_falls_with_training():
    torch.manual_seed(1)
    g = torch.Generator().manual_seed(1)
    ref = baselines.ScoreNet(2, 16).requires_grad_(False)
    x_w, x_l = torch.randn(256, 2) + 2, torch.randn(256, 2) - 2
    at_ref = baselines.diffusion_dpo_loss(ref, ref, x_w, x_l, 100.0, 1e-3, 5.0, g)
    assert math.isclose(float(at_ref), math.log(2), rel_tol=1e-6)
    tuned = baselines.diffusion_dpo(ref, x_w, x_l, 200, 64, 1e-3, 100.0, 1e-3, 5.0, g)
    losses = [
        float(baselines.diffusion_dpo_loss(tuned, ref, x_w, x_l, 100.0, 1e-3, 5.0, g))
        for _ in range(20)
    ]
    assert sum(losses) / len(losses) < math.log(2) - 0.02


def test_da_weights_linear_and_constant_schedules():
    beta, beta_p = 2.0, 3.0
    for k in range(5):
        n = k + 1  # first variations after loop k
        w, d_prev, d_new = da_weights(k, beta, beta_p, "linear")
        assert w == n and d_new == pytest.approx(beta * n * (n + 1) / 2 + beta_p * (n + 1))
        assert d_prev == pytest.approx(beta * k * (k + 1) / 2 + beta_p * (k + 1))
        _, _, d_const = da_weights(k, beta, beta_p, "constant")
        assert d_const == pytest.approx(beta * n * (n + 1) / 2 + beta_p)
    with pytest.raises(ValueError, match="schedule must be one of"):
        da_weights(0, 1.0, 1.0, "cubic")


def test_grid_da_fixed_point_is_q_hat_for_both_schedules():
    """Exact DA on a coarse grid converges to the L-BFGS optimum; beta' slows the linear
    schedule (its shrink factor W_k / (W_k + c_k beta'/beta) tends to 1 like 1/k)."""
    mix = ring_mixture(6, 4.0, 0.3)
    fn = lambda x: reward(x, mix.means[0].double(), 1.0)
    grid = evaluation.make_grid(mix, fn, 0.6)
    q_hat = evaluation.optimal_distribution(grid, "dpo", 1.0, 1.0)
    tv = {}
    for schedule in ("linear", "constant"):
        qs = grid_dual_averaging("dpo", grid.p, grid.r, 60, 1.0, 1.0, 1.0, schedule)
        tv[schedule] = [evaluation.total_variation(q, q_hat) for q in qs]
        assert tv[schedule][-1] < tv[schedule][0] / 10
    assert tv["constant"][-1] < 1e-3 and tv["constant"][5] < tv["linear"][5]


def test_t_interval_matches_the_textbook_formula():
    iv = t_interval([1.0, 2.0, 4.0])
    half = 4.303 * math.sqrt(7 / 3) / math.sqrt(3)
    assert iv["mean"] == pytest.approx(7 / 3)
    assert iv["low"] == pytest.approx(7 / 3 - half) and iv["high"] == pytest.approx(7 / 3 + half)
    assert t_interval([1.0])["high"] is None
