"""PLR and ASR against closed forms, brute force, invariances and a toy ranking problem."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from scipy.stats import kendalltau

from tpo.baselines import dpo_gold_vs_worst, dpo_loss
from tpo.tree_loss import (
    asr_pair_margins,
    asr_rewards,
    current_ranks,
    gains,
    lambda_weights,
    merge_tail,
    pair_step_similarity,
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


@pytest.mark.parametrize("asr", [None, "paper", "code", "anchor"])
def test_raising_top_response_lowers_the_loss(asr):
    g = torch.Generator().manual_seed(3)
    scores = torch.tensor([[10.0, 100.0, -30.0, 55.0]], dtype=torch.float64)
    steps = torch.randn(1, 4, 3, generator=g, dtype=torch.float64)
    states = torch.randn(1, 4, 3, 8, generator=g, dtype=torch.float64)
    counts = torch.full((1, 4, 3), 5.0, dtype=torch.float64)

    def loss(s):
        if asr:
            return tpo_loss(s, states, counts, scores, beta=0.5, asr=asr)
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
    assert torch.allclose(pair_step_similarity(h, valid), torch.ones(1, 3, 3, 3, dtype=h.dtype))
    steps = torch.randn(1, 3, 3, generator=g, dtype=torch.float64)
    counts = torch.tensor([[[4.0, 5.0, 2.0]] * 3], dtype=torch.float64)
    scores = torch.tensor([[100.0, 0.0, -50.0]], dtype=torch.float64)
    plain = 0.5 * steps.sum(-1)
    margins = asr_pair_margins(steps, h, valid, beta=0.5)
    assert torch.allclose(margins, plain[:, :, None] - plain[:, None, :], rtol=1e-12, atol=1e-15)
    anchor = asr_rewards(steps, h, counts, scores, beta=0.5, variant="anchor")
    assert torch.allclose(anchor, plain, rtol=1e-12, atol=0)
    # official loss.py: equal weights give the mean over steps of each step's token-mean
    code = asr_rewards(steps, h, counts, scores, beta=0.5, variant="code")
    assert torch.allclose(code, 0.5 * (steps / counts).mean(-1), rtol=1e-12, atol=0)


def _two_responses_split_at_step_2():
    h = torch.zeros(1, 2, 3, 2, dtype=torch.float64)
    h[..., 0] = 1.0
    h[0, 1, 2] = torch.tensor([0.6, 0.8])  # response 1 departs from the gold at step 2
    valid = torch.ones(1, 2, 3, dtype=torch.bool)
    steps = torch.tensor([[[0.2, -0.1, 0.0], [0.2, -0.1, -1.0]]], dtype=torch.float64)
    return h, valid, steps


def test_paper_asr_moves_the_margin_onto_the_step_where_siblings_differ():
    h, valid, steps = _two_responses_split_at_step_2()
    margins = asr_pair_margins(steps, h, valid, beta=1.0)
    # shared steps have equal log-ratios and add nothing; the differing step's weight is
    # (1 - 0.6 + 0.1) / mean(0.1, 0.1, 0.5) = 0.5 / (0.7 / 3)
    assert float(margins[0, 0, 1]) == pytest.approx(1.0 * 0.5 / (0.7 / 3))
    assert torch.allclose(margins, -margins.transpose(1, 2))
    counts = torch.full((1, 2, 3), 5.0, dtype=torch.float64)
    scores = torch.tensor([[100.0, -100.0]], dtype=torch.float64)
    code = asr_rewards(steps, h, counts, scores, beta=1.0, variant="code")
    assert float(code[0, 0] - code[0, 1]) < 1.0  # official weights damp the differing step


def test_paper_asr_gradient_raises_better_and_lowers_worse_responses_on_every_step():
    """The pairwise form gives both responses of a pair the same step weights, so no step of the
    best response is ever pushed down (the per-response form can: its weights differ)."""
    g = torch.Generator().manual_seed(5)
    steps = torch.randn(2, 5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    states = torch.randn(2, 5, 4, 8, generator=g, dtype=torch.float64)
    counts = torch.full((2, 5, 4), 5.0, dtype=torch.float64)
    scores = torch.tensor([[100.0, 40.0, -10.0, -60.0, -100.0]] * 2, dtype=torch.float64)
    tpo_loss(steps, states, counts, scores, beta=0.5, asr="paper").backward()
    assert bool((steps.grad[:, 0] <= 0).all()) and bool((steps.grad[:, -1] >= 0).all())


def test_training_on_a_shared_prefix_tree_raises_the_gold_for_every_variant():
    """Stability on a tree-structured toy policy: responses share prefix steps (one parameter per
    tree node, as an LM shares the prefix's log-probs), each node also has an unlisted
    alternative. 300 Adam steps of every loss must raise the gold's log-probability; PLR and the
    paper's pairwise ASR must rank the five responses in score order (the official ASR's reward is
    a mean of step token-means, not log pi(y|x), so its order is not checked)."""
    resp = ["aaaa", "aabb", "accc", "aaaw", "dddd"]
    scores = torch.tensor([[100.0, 40.0, -10.0, -60.0, -100.0]], dtype=torch.float64)
    nodes = {r[: k + 1]: None for r in resp for k in range(4)}
    index = {node: i for i, node in enumerate(nodes)}
    kids: dict[str, list[str]] = {}
    for node in nodes:
        kids.setdefault(node[:-1], []).append(node)
    emb = torch.randn(
        len(nodes), 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    states = torch.stack([torch.stack([emb[index[r[: k + 1]]] for k in range(4)]) for r in resp])
    counts = torch.full((1, 5, 4), 5.0, dtype=torch.float64)

    def step_logps(theta):
        rows = []
        for r in resp:
            row = []
            for k in range(4):
                sib = kids[r[:k]]
                logits = torch.cat([theta[[index[s] for s in sib]], theta.new_zeros(1)])
                row.append(torch.log_softmax(logits, 0)[sib.index(r[: k + 1])])
            rows.append(torch.stack(row))
        return torch.stack(rows)

    ref = step_logps(torch.zeros(len(nodes), dtype=torch.float64)).detach()
    for asr in (None, "paper", "code", "anchor"):
        theta = torch.zeros(len(nodes), dtype=torch.float64, requires_grad=True)
        opt = torch.optim.Adam([theta], lr=0.1)
        for _ in range(300):
            ratio = (step_logps(theta) - ref)[None]
            if asr is None:
                loss = plr_loss(0.5 * ratio.sum(-1), scores)
            else:
                loss = tpo_loss(ratio, states[None], counts, scores, 0.5, asr)
            opt.zero_grad()
            loss.backward()
            opt.step()
        logp = step_logps(theta.detach()).sum(-1)
        assert logp[0] > ref.sum(-1)[0] + 1.0, asr
        tau = kendalltau(logp.numpy(), scores[0].numpy()).statistic
        if asr in (None, "paper"):
            assert tau == pytest.approx(1.0), asr
        elif asr == "anchor":
            # first-pass ASR discounts the steps a response shares with the best one, so the
            # wrong trajectory that copies three gold steps ("aaaw") overtakes a better branch
            assert logp[3] > logp[2] and tau < 1.0


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


def test_official_step_merge_folds_steps_past_the_shortest_response_into_its_last_step():
    """dataset.py: every step index past the list's smallest step count S becomes S. Sums and
    token counts add up; hidden states become the token-weighted mean of the merged steps."""
    counts = torch.tensor([[[2.0, 3.0, 0.0, 0.0], [1.0, 1.0, 2.0, 0.0], [2.0, 2.0, 2.0, 2.0]]])
    ratio = torch.tensor([[[1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 3.0, 0.0], [1.0, 2.0, 3.0, 4.0]]])
    h = torch.randn(1, 3, 4, 5, generator=torch.Generator().manual_seed(0))
    r, states, c = merge_tail(ratio, h, counts)
    assert r.tolist() == [[[1.0, 2.0, 0.0, 0.0], [1.0, 5.0, 0.0, 0.0], [1.0, 9.0, 0.0, 0.0]]]
    assert c.tolist() == [[[2.0, 3.0, 0.0, 0.0], [1.0, 3.0, 0.0, 0.0], [2.0, 6.0, 0.0, 0.0]]]
    assert torch.allclose(states[0, 1, 1], (h[0, 1, 1] + 2 * h[0, 1, 2]) / 3)
    assert torch.allclose(states[0, 0, :2], h[0, 0, :2])  # the shortest response is unchanged
    # equal step counts: nothing moves, and the merged loss equals the plain one
    same = torch.ones(1, 3, 4)
    scores = torch.tensor([[100.0, 0.0, -50.0]])
    plain = tpo_loss(ratio, h, same, scores, 0.5, "paper")
    assert torch.equal(tpo_loss(ratio, h, same, scores, 0.5, "paper", "official"), plain)
    with pytest.raises(ValueError, match="step_merge"):
        tpo_loss(ratio, h, same, scores, 0.5, "paper", "merged")
