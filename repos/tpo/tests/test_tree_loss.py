"""PLR and ASR against closed forms, brute force, invariances and a toy ranking problem."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from scipy.stats import kendalltau

from tpo.baselines import dpo_gold_vs_worst, dpo_loss
from tpo.tree_loss import (
    asr_rewards,
    current_ranks,
    gains,
    lambda_weights,
    plr_loss,
    step_similarity,
    tpo_loss,
)


def test_list_of_two_equals_dpo_exactly():
    g = torch.Generator().manual_seed(0)
    rewards = torch.randn(6, 2, generator=g, dtype=torch.float64)
    scores = torch.tensor([[90.0, -20.0], [-5.0, 40.0]] * 3, dtype=torch.float64)
    win = scores.argmax(-1)
    rows = torch.arange(6)
    expected = dpo_loss(rewards[rows, win], rewards[rows, 1 - win])
    assert torch.allclose(plr_loss(rewards, scores), expected, atol=0, rtol=1e-12)
    assert torch.allclose(dpo_gold_vs_worst(rewards, scores), expected, atol=0, rtol=1e-12)


def test_lambda_equals_brute_force_delta_ndcg():
    g = torch.Generator().manual_seed(1)
    rewards = torch.randn(1, 5, generator=g, dtype=torch.float64)
    scores = torch.tensor([[100.0, 40.0, 70.0, -60.0, 10.0]], dtype=torch.float64)
    gain, tau = gains(scores)[0], current_ranks(rewards, scores)[0].tolist()

    def dcg(ranks):
        return sum(float(gain[i]) / math.log2(1 + ranks[i]) for i in range(5))

    ideal = dcg([sorted(range(5), key=lambda i: -scores[0, i]).index(i) + 1 for i in range(5)])
    lam = lambda_weights(rewards, scores)[0]
    for i, j in itertools.permutations(range(5), 2):
        swapped = list(tau)
        swapped[i], swapped[j] = tau[j], tau[i]
        delta_ndcg = abs(dcg(swapped) - dcg(tau)) / ideal
        assert math.isclose(float(lam[i, j]) / ideal, delta_ndcg, rel_tol=1e-12, abs_tol=1e-15)


def test_loss_is_invariant_to_permuting_the_list():
    g = torch.Generator().manual_seed(2)
    rewards = torch.randn(3, 5, generator=g, dtype=torch.float64)
    rewards[0] = 0.0  # reward ties (pi = pi_ref) must not make the loss order-dependent
    scores = torch.tensor([[100.0, 20.0, 20.0, -40.0, 60.0]] * 3, dtype=torch.float64)
    perm = torch.tensor([3, 0, 4, 2, 1])
    a = plr_loss(rewards, scores)
    b = plr_loss(rewards[:, perm], scores[:, perm])
    assert torch.allclose(a, b, rtol=1e-12, atol=0)


def test_ties_give_no_gradient():
    rewards = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    scores = torch.full((2, 4), 30.0, dtype=torch.float64)
    loss = plr_loss(rewards, scores)
    loss.backward()
    assert loss.item() == 0.0 and torch.count_nonzero(rewards.grad) == 0
    # a tied pair inside a list carries no weight
    lam = lambda_weights(rewards.detach()[:1], torch.tensor([[80.0, 10.0, 10.0, -50.0]]))
    assert lam[0, 1, 2] == 0 and lam[0, 2, 1] == 0


@pytest.mark.parametrize("use_asr", [False, True])
def test_raising_top_response_lowers_the_loss(use_asr):
    g = torch.Generator().manual_seed(3)
    scores = torch.tensor([[10.0, 100.0, -30.0, 55.0]], dtype=torch.float64)
    steps = torch.randn(1, 4, 3, generator=g, dtype=torch.float64)
    states = torch.randn(1, 4, 3, 8, generator=g, dtype=torch.float64)
    valid = torch.ones(1, 4, 3, dtype=torch.bool)

    def loss(s):
        if use_asr:
            return tpo_loss(s, states, valid, scores, beta=0.5)
        return plr_loss(0.5 * s.sum(-1), scores)

    raised = steps.clone()
    raised[0, 1, 2] += 0.5  # more log-probability on the best response's last step
    assert loss(raised) < loss(steps)


def test_identical_steps_have_cosine_one_and_equal_weights_give_plain_rewards():
    g = torch.Generator().manual_seed(4)
    h = torch.randn(1, 1, 3, 8, generator=g, dtype=torch.float64).expand(1, 3, 3, 8)
    valid = torch.ones(1, 3, 3, dtype=torch.bool)
    cos = step_similarity(h, valid, anchor=torch.tensor([0]))
    assert torch.allclose(cos, torch.ones_like(cos))
    steps = torch.randn(1, 3, 3, generator=g, dtype=torch.float64)
    scores = torch.tensor([[100.0, 0.0, -50.0]], dtype=torch.float64)
    for direction in ("paper", "code"):
        r = asr_rewards(steps, h, valid, scores, beta=0.5, direction=direction)
        assert torch.allclose(r, 0.5 * steps.sum(-1), rtol=1e-12, atol=0)


def test_asr_paper_direction_upweights_the_differing_step():
    h = torch.zeros(1, 2, 3, 2, dtype=torch.float64)
    h[..., 0] = 1.0
    h[0, 1, 2] = torch.tensor([0.0, 1.0])  # response 1 departs from the gold at step 2
    valid = torch.ones(1, 2, 3, dtype=torch.bool)
    steps = torch.tensor([[[0.0, 0.0, 0.0], [0.0, 0.0, -1.0]]], dtype=torch.float64)
    scores = torch.tensor([[100.0, -100.0]], dtype=torch.float64)
    paper = asr_rewards(steps, h, valid, scores, beta=1.0, direction="paper")
    code = asr_rewards(steps, h, valid, scores, beta=1.0, direction="code")
    assert paper[0, 1] < -1.0 < code[0, 1]  # plain reward is -1; paper amplifies, code damps


def test_tpo_orders_five_arms_while_dpo_orders_only_extremes():
    scores = torch.tensor([[-50.0, 100.0, 0.0, -100.0, 50.0]])

    def train(loss_fn):
        logits = torch.zeros(5, requires_grad=True)  # categorical policy; reference is uniform
        opt = torch.optim.Adam([logits], lr=0.05)
        for _ in range(300):
            rewards = 0.5 * (torch.log_softmax(logits, 0) - math.log(0.2))[None]
            opt.zero_grad()
            loss_fn(rewards, scores).backward()
            opt.step()
        return kendalltau(logits.detach().numpy(), scores[0].numpy()).statistic

    assert train(plr_loss) == pytest.approx(1.0)
    assert train(dpo_gold_vs_worst) < 0.9
