"""PPO pieces against closed forms, and a bandit toy that must learn when to retrieve."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from smartrag.data import Question
from smartrag.policy import Codec, Policy, build_tokenizer
from smartrag.ppo import (
    AdaptiveKL,
    PPOSettings,
    clipped_policy_loss,
    clipped_value_loss,
    gae,
    kl_penalty,
    ppo_train,
)


def test_gae_equals_closed_form_on_three_steps():
    r = torch.tensor([0.5, -0.2, 2.0])
    v = torch.tensor([1.0, 0.3, 1.5])
    g, lam = 0.9, 0.8
    d0 = r[0] + g * v[1] - v[0]
    d1 = r[1] + g * v[2] - v[1]
    d2 = r[2] - v[2]
    expected = torch.stack([d0 + g * lam * d1 + (g * lam) ** 2 * d2, d1 + g * lam * d2, d2])
    adv, ret = gae(r, v, g, lam)
    assert torch.allclose(adv, expected)
    assert torch.allclose(ret, expected + v)


def test_gae_with_lambda_one_is_monte_carlo_return_minus_value():
    r, v = torch.tensor([1.0, 0.0, 3.0]), torch.tensor([0.2, 0.1, 0.4])
    adv, _ = gae(r, v, 1.0, 1.0)
    assert torch.allclose(adv, torch.tensor([4.0, 3.0, 3.0]) - v)


@pytest.mark.parametrize(
    ("ratio", "adv", "zero"),
    [(1.5, 1.0, True), (0.5, -1.0, True), (1.1, 1.0, False), (0.5, 1.0, False)],
)
def test_clip_gives_zero_gradient_outside_the_region(ratio, adv, zero):
    old = torch.tensor([0.0])
    logp = torch.tensor([float(torch.log(torch.tensor(ratio)))], requires_grad=True)
    loss = clipped_policy_loss(logp, old, torch.tensor([adv]), 0.2, torch.ones(1))
    loss.backward()
    assert (logp.grad.abs().item() == 0.0) == zero


def test_value_loss_is_clipped():
    old, ret = torch.tensor([0.0]), torch.tensor([1.0])
    v = torch.tensor([0.5], requires_grad=True)
    clipped_value_loss(v, old, ret, 0.2, torch.ones(1)).backward()
    # unclipped (0.5-1)^2 = 0.25 < clipped (0.2-1)^2 = 0.64: the clipped branch has no gradient
    assert v.grad.item() == 0.0


def test_kl_zero_when_policy_equals_reference():
    lp = torch.log_softmax(torch.randn(4, 7), -1)
    assert torch.count_nonzero(kl_penalty(lp, lp.clone(), 0.3)) == 0
    assert torch.allclose(kl_penalty(lp, lp - 1.0, 0.5), torch.full_like(lp, -0.5))


def test_adaptive_kl_moves_towards_target():
    ctl = AdaptiveKL(0.1, target=0.2, horizon=100)
    assert ctl.update(1.0, 10) > 0.1
    ctl = AdaptiveKL(0.1, target=0.2, horizon=100)
    assert ctl.update(0.0, 10) < 0.1


def test_bandit_toy_learns_to_retrieve_only_on_tail_questions():
    """Contexts head/tail, actions answer/search; rewards follow the environment (alpha 0.2)."""
    torch.manual_seed(0)
    logits = torch.zeros(2, 2, requires_grad=True)  # [context, action]; action 1 = search
    opt = torch.optim.Adam([logits], lr=0.05)
    reward = torch.tensor([[2.0, 1.8], [0.0, 1.8]])  # head knows the answer, tail must search
    for _ in range(300):
        ctx = torch.randint(0, 2, (64,))
        with torch.no_grad():
            old = torch.log_softmax(logits, -1)[ctx]
            act = torch.multinomial(old.exp(), 1).squeeze(1)
            old_lp = old.gather(1, act[:, None]).squeeze(1)
            r = reward[ctx, act]
            adv = r - (old.exp() * reward[ctx]).sum(-1)  # exact state value as the baseline
        for _ in range(2):
            lp = torch.log_softmax(logits, -1)[ctx].gather(1, act[:, None]).squeeze(1)
            loss = clipped_policy_loss(lp, old_lp, adv, 0.2, torch.ones(64))
            opt.zero_grad()
            loss.backward()
            opt.step()
    p_search = torch.softmax(logits, -1)[:, 1]
    assert p_search[0] < 0.1 and p_search[1] > 0.9


BANDIT_WORDS = ["<pad>", "<unk>", "<eos>", "<sep>", "[SEARCH]", "[ANSWER]", "Q", "OBS", "what",
                "red", "blue", "green"]  # fmt: skip


class NoRetriever:
    """Never searched: the quota is 0."""

    documents = ("red",)

    def search(self, queries, k):
        return [[0] for _ in queries]


def test_ppo_raises_reward_on_a_tiny_bandit_end_to_end():
    """ppo_train itself (rollouts, scoring, KL-shaped GAE advantages, clipped updates) on one
    question with quota 0: a_0 must be [ANSWER] (anything else is malformed, -1) and a_1 the
    answer (EM + F1 = 2). From a random policy (about -0.9) the mean episode reward must rise
    well above where it started; a flipped advantage drives it down to -1 instead."""
    torch.manual_seed(0)
    codec = Codec(build_tokenizer(BANDIT_WORDS))
    policy = Policy.from_config(len(BANDIT_WORDS), 1, 16, 2, 16)
    settings = PPOSettings(
        iterations=12, batch=32, epochs=2, minibatch=32, lr=1e-2, clip=0.2, vf_coef=0.5,
        gamma=1.0, lam=0.95, kl_init=0.001, kl_target=0.2, kl_horizon=10000, max_grad_norm=1.0,
        quota=0, top_k=1, alpha=0.2, max_new=2,
    )  # fmt: skip
    questions = [Question("what", ("red",))] * 32
    log = ppo_train(policy, copy.deepcopy(policy), codec, NoRetriever(), questions, settings, 0)
    first, last = log[0]["reward"], float(np.mean([r["reward"] for r in log[-3:]]))
    assert first < -0.5 and last > first + 0.8 and last > 0, [r["reward"] for r in log]


def test_ppo_end_to_end_stops_retrieving_on_a_known_question():
    """ppo_train from a warm-up that over-retrieves: on a head question the LM can answer
    closed-book (EM + F1 = 2), a retrieval only costs alpha before the same answer, so PPO must
    raise the reward and lower p([SEARCH]) (the paper's decision, learnt from the environment).
    With a flipped advantage p([SEARCH]) rises instead."""
    from types import SimpleNamespace

    from smartrag.env import prompt
    from smartrag.rollout import search_probability
    from smartrag.warmup import fit_lm

    torch.manual_seed(0)
    codec = Codec(build_tokenizer(BANDIT_WORDS))
    policy = Policy.from_config(len(BANDIT_WORDS), 1, 16, 2, 24)
    p0, p1 = prompt("what", []), prompt("what", ["red"])
    sft = [(f"{p0} [SEARCH] what <eos>", p0)] * 7 + [(f"{p0} [ANSWER] red <eos>", p0)] * 3
    sft += [(f"{p1} [ANSWER] red <eos>", p1)] * 10
    warm = SimpleNamespace(lm_lr=1e-2, lm_batch=32)
    fit_lm(policy, codec, sft, 150, warm, np.random.default_rng(0))
    start = float(search_probability(policy, codec, codec.encode([p0]))[0])
    settings = PPOSettings(
        iterations=10, batch=32, epochs=2, minibatch=32, lr=5e-3, clip=0.2, vf_coef=0.5,
        gamma=1.0, lam=0.95, kl_init=0.001, kl_target=0.2, kl_horizon=10000, max_grad_norm=1.0,
        quota=1, top_k=1, alpha=0.5, max_new=3,
    )  # fmt: skip
    questions = [Question("what", ("red",), head=True)] * 32
    log = ppo_train(policy, copy.deepcopy(policy), codec, NoRetriever(), questions, settings, 0)
    end = float(search_probability(policy, codec, codec.encode([p0]))[0])
    first, last = log[0]["reward"], float(np.mean([r["reward"] for r in log[-3:]]))
    assert 0.4 < start < 0.95, start  # the warm-up over-retrieves
    assert end < start - 0.3 and end < 0.3, (start, end)
    assert last > first + 0.1, [r["reward"] for r in log]
