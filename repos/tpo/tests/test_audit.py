"""Audit of what the benchmark measures: implicit rewards over response tokens only, ranking
metrics independent of list order, the sibling-margin pairs, and ASR on real hidden states."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tpo.data import Tokenizer, Tree
from tpo.evaluation import (
    implicit_rewards,
    ranking_quality,
    reference_steps,
    step_logps,
    step_validity,
    tree_batch,
)
from tpo.policy import build_policy
from tpo.tree_loss import pair_step_similarity, plr_loss, step_similarity

TOK = Tokenizer(5)
GOLD = "S 1 + 2 = 3 S 3 * 2 = 1 S 1 - 4 = 2 A 2"
TREES = [
    Tree(
        "x 1 + 2 * 2 - 4 ?",
        [
            GOLD,
            "S 1 + 2 = 3 S 3 * 2 = 1 S 1 - 4 = 3 A 3",
            "S 1 + 2 = 3 S 3 * 2 = 4 S 4 - 4 = 0 A 0",
            "S 1 + 2 = 0 S 0 * 2 = 0 S 0 - 4 = 1 A 1",
        ],
        [100.0, 50.0, 0.0, -100.0],
        [3, 2, 1, 0],
    ),
    Tree("x 3 - 1 ?", ["S 3 - 1 = 2 A 2", "S 3 - 1 = 4 A 4"], [100.0, -100.0], [1, 0]),
]


def _models():
    torch.manual_seed(0)
    policy = build_policy(len(TOK.itos), 1, 16, 2).eval()
    ref = build_policy(len(TOK.itos), 1, 16, 2).eval()
    return policy, ref


def _naive_logp(model, prompt: str, response: str) -> float:
    """log pi(response | prompt), one unpadded sequence, summed over response tokens (and <eos>)."""
    p = [TOK.bos] + TOK.encode(prompt)
    r = TOK.encode(response) + [TOK.eos]
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=torch.tensor([p + r])).logits[0], -1)
    return sum(float(logp[len(p) + t - 1, tok]) for t, tok in enumerate(r))


@pytest.mark.parametrize("chunk", [1, 64])
def test_implicit_reward_sums_response_tokens_only(chunk):
    """beta * (log pi - log pi_ref) over response tokens: prompt and padding never count, and the
    batch a tree is scored in (chunk size, padding width) does not change it."""
    policy, ref = _models()
    cache = reference_steps(ref, TOK, TREES, "cpu", chunk=chunk)
    got = implicit_rewards(policy, TOK, TREES, cache, beta=0.5, chunk=chunk)
    for tree, rewards in zip(TREES, got, strict=True):
        for response, r in zip(tree.responses, rewards, strict=True):
            expected = 0.5 * (
                _naive_logp(policy, tree.prompt, response) - _naive_logp(ref, tree.prompt, response)
            )
            assert r == pytest.approx(expected, abs=1e-5)


def test_reference_model_against_itself_gives_zero_rewards():
    """With pi = pi_ref (the SFT row of the benchmark) every implicit reward is exactly 0."""
    policy, _ = _models()
    cache = reference_steps(policy, TOK, TREES, "cpu")
    for rewards in implicit_rewards(policy, TOK, TREES, cache, beta=0.5):
        assert np.all(rewards == 0.0)


def test_ranking_metrics_ignore_list_order_and_pair_siblings_by_shared_prefix():
    tree = TREES[0]
    rewards = np.array([0.3, 0.1, 0.2, -0.4])
    got = ranking_quality([rewards], [tree])
    # sibling pairs: v_i > v_j with both sharing >= 1 gold step -> (0,1), (0,2), (1,2)
    assert got["sibling_margin"] == pytest.approx(np.mean([0.3 - 0.1, 0.3 - 0.2, 0.1 - 0.2]))
    assert got["kendall_tau"] == pytest.approx(2 / 3)  # 5 concordant, 1 discordant of 6
    perm = [2, 0, 3, 1]
    shuffled = Tree(
        tree.prompt,
        [tree.responses[i] for i in perm],
        [tree.scores[i] for i in perm],
        [tree.prefix_steps[i] for i in perm],
    )
    again = ranking_quality([rewards[perm]], [shuffled])
    assert again == pytest.approx(got)
    perfect = ranking_quality([np.array([3.0, 2.0, 1.0, 0.0])], [tree])
    assert perfect["ndcg"] == pytest.approx(1.0) and perfect["kendall_tau"] == pytest.approx(1.0)


def test_asr_on_model_states_shared_steps_have_cosine_one():
    """Responses that copy the gold's first steps have identical hidden states there (cos = 1, so
    the paper-direction weight is lowest); a step after the split has cos < 1."""
    policy, _ = _models()
    batch, scores = tree_batch(TOK, TREES[:1], "cpu")
    with torch.no_grad():
        _, states = step_logps(policy, batch, hidden=True)
    k = states.shape[1]
    valid = step_validity(batch, k).view(1, 4, k)
    cos = step_similarity(states.view(1, 4, k, -1), valid, scores.argmax(-1))[0]
    assert torch.allclose(cos[0, :3], torch.ones(3), atol=1e-5)  # the gold against itself
    assert torch.allclose(cos[1, :2], torch.ones(2), atol=1e-5)  # shares steps 0 and 1
    assert torch.allclose(cos[2, :1], torch.ones(1), atol=1e-5)  # shares step 0
    assert cos[2, 2] < 1 - 1e-4 and cos[3, 2] < 1 - 1e-4  # later steps follow other values
    pair = pair_step_similarity(states.view(1, 4, k, -1), valid)[0]
    assert torch.allclose(pair[0], cos)  # row 0 of the pairwise cosines is the gold's
    assert torch.allclose(pair, pair.transpose(0, 1))
    assert pair[1, 2, 0] == pytest.approx(1.0, abs=1e-5)  # siblings 1 and 2 share step 0


def test_one_response_or_non_finite_scores_are_clear_errors_in_the_loss():
    with pytest.raises(ValueError, match="at least 2 responses"):
        plr_loss(torch.zeros(3, 1), torch.zeros(3, 1))
    with pytest.raises(ValueError, match="finite"):
        plr_loss(torch.zeros(1, 3), torch.tensor([[1.0, float("nan"), 0.0]]))
