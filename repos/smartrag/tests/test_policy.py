"""The policy: padding does not change scores, the quota mask forces [ANSWER], episodes run."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from smartrag.config import PRESETS
from smartrag.policy import generate, score
from smartrag.retrieval import make_retriever
from smartrag.rollout import run_episodes
from smartrag.train import build

from .conftest import TINY


def _setup():
    cfg = dataclasses.replace(PRESETS["quick"], **TINY)
    world, codec, policy = build(cfg)
    return cfg, world, codec, policy.eval()


def test_score_is_invariant_to_left_padding():
    _, world, codec, policy = _setup()
    prompts = codec.encode(["Q " + world.questions[0].text + " <sep>", "Q a <sep>"])
    actions = [[codec.answer, 7, codec.eos], [codec.search, 9]]
    force = torch.tensor([False, False])
    both = score(policy, codec, prompts, actions, force)[0]
    alone = score(policy, codec, prompts[:1], actions[:1], force[:1])[0]
    assert torch.allclose(both[0], alone[0], atol=1e-5)
    # the same log-probability by a plain forward pass without padding
    ids = torch.tensor([prompts[0] + actions[0]])
    logits = policy(ids, torch.ones_like(ids))[0][0].log_softmax(-1)
    n = len(prompts[0])
    direct = torch.stack([logits[n - 1 + t, a] for t, a in enumerate(actions[0])])
    assert torch.allclose(both[0, :3], direct, atol=1e-5)


class _AlwaysSearch(torch.nn.Module):
    """A stand-in policy that puts almost all probability on [SEARCH]."""

    def __init__(self, vocab: int, search: int):
        super().__init__()
        self.vocab, self.search = vocab, search

    def forward(self, ids, mask):
        logits = torch.zeros(*ids.shape, self.vocab)
        logits[..., self.search] = 30.0
        return logits, torch.zeros(ids.shape)


def test_quota_mask_forces_answer():
    _, world, codec, _ = _setup()
    policy = _AlwaysSearch(codec.tok.get_vocab_size(), codec.search)
    prompts = codec.encode(["Q " + q.text + " <sep>" for q in world.questions[:8]])
    gen = torch.Generator().manual_seed(0)
    free = generate(policy, codec, prompts, 2, torch.zeros(8, dtype=torch.bool), True, gen)
    assert all(a[0] == codec.search for a in free)
    forced = generate(policy, codec, prompts, 2, torch.ones(8, dtype=torch.bool), True, gen)
    assert all(a[0] != codec.search for a in forced)
    logp = score(policy, codec, prompts, forced, torch.ones(8, dtype=torch.bool))[0]
    assert torch.isfinite(logp).all()


def test_episodes_respect_the_quota_and_count_turns():
    _cfg, world, codec, policy = _setup()
    r = make_retriever("bm25", world.documents)
    qs = world.questions[:6]
    always = np.ones(len(qs), bool)
    for quota in (0, 1, 2):
        turns, out = run_episodes(policy, codec, r, qs, quota=quota, top_k=1, alpha=0.2,
                                  max_new=4, sample=False, decide=always)  # fmt: skip
        assert all(o.searches <= quota for o in out)
        assert len(turns) <= len(qs) * (quota + 1)
        if quota == 0:
            assert all(t.action[0] != codec.search for t in turns)


def test_decision_rules_full_and_pair():
    _, world, codec, policy = _setup()
    prompts = codec.encode(["Q " + q.text + " <sep>" for q in world.questions[:4]])
    from smartrag.rollout import search_probability

    full = search_probability(policy, codec, prompts, "full")
    pair = search_probability(policy, codec, prompts, "pair")
    # the full-softmax probability is the pair ratio times p(S)+p(A) <= 1
    assert np.all(full <= pair + 1e-6) and np.all(full > 0)
    logits = policy(*codec.left_pad(prompts))[0][:, -1].softmax(-1)
    assert np.allclose(full, logits[:, codec.search].detach().numpy(), atol=1e-6)
