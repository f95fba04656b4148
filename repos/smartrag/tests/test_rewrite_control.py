"""The p_rewrite = 0 control of rewriter-finds-answers: a twin warm-up that differs from the main
one only in the queries of its search targets."""

from __future__ import annotations

import copy
import dataclasses

import torch

from smartrag import warmup
from smartrag.env import SEARCH
from smartrag.retrieval import make_retriever
from smartrag.train import build


def _flat(policy) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in policy.parameters()]).clone()


def test_twin_warm_up_has_the_same_labels_and_start_but_no_gold_rewrite(tiny, monkeypatch):
    """Main SFT with p_rewrite = 1 (every search target is the gold rewrite) and its twin: both
    SFTs start from the pretrained weights with the same rng state, so they draw the same labels
    and batches; the twin's search targets are the raw questions."""
    examples, starts = [], []
    real_examples, real_fit = warmup.sft_examples, warmup.fit_lm

    def spy_examples(world, knows, retriever, cfg, rng):
        state = copy.deepcopy(rng.bit_generator.state)
        out = real_examples(world, knows, retriever, cfg, rng)
        examples.append((cfg.p_rewrite, state, out))
        return out

    def spy_fit(policy, codec, data, steps, cfg, rng, progress=None):
        starts.append(_flat(policy))
        return real_fit(policy, codec, data, steps, cfg, rng, progress)

    monkeypatch.setattr(warmup, "sft_examples", spy_examples)
    monkeypatch.setattr(warmup, "fit_lm", spy_fit)
    cfg = dataclasses.replace(tiny, rewrite_control=True, p_rewrite=1.0, sft_search_known=1.0)
    world, codec, policy = build(cfg)
    retriever = make_retriever(cfg.retriever, world.documents, cfg.device, cfg.encoder)
    out = warmup.warm_up(policy, codec, world, retriever, cfg)

    (p_main, state_main, main), (p_twin, state_twin, twin) = examples
    assert (p_main, p_twin) == (1.0, 0.0) and state_main == state_twin
    assert len(main) == len(twin)
    differ = [(a, b) for a, b in zip(main, twin, strict=True) if a != b]
    # every train question is a search target (sft_search_known = 1): one per question
    assert len(differ) == len(world.train)
    for q, (a, b) in zip(world.train, differ, strict=True):
        assert a[0].endswith(f"{SEARCH} {q.rewrite} <eos>")
        assert b[0].endswith(f"{SEARCH} {q.text} <eos>") and a[1] == b[1]
    # pretraining, main SFT, twin SFT: the twin starts where the main SFT started
    assert len(starts) == 3 and torch.equal(starts[1], starts[2])
    assert not torch.equal(starts[0], starts[1])
    assert not torch.equal(_flat(out["no_rewrite"]), starts[2])  # the twin was fine-tuned
    assert not torch.equal(_flat(out["no_rewrite"]), _flat(policy))


def test_no_twin_without_the_flag(tiny):
    world, codec, policy = build(tiny)
    retriever = make_retriever(tiny.retriever, world.documents, tiny.device, tiny.encoder)
    assert "no_rewrite" not in warmup.warm_up(policy, codec, world, retriever, tiny)
