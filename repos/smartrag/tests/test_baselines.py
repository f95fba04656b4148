"""The modular pipeline's separately trained rewriter learns only from queries that retrieved
the answer (retrieval feedback), and the classifier's probability is thresholded like tau."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from smartrag.baselines import RetrievalClassifier, train_rewriter
from smartrag.retrieval import make_retriever
from smartrag.train import build


def _changed(a, b) -> bool:
    return any(not torch.equal(x, y) for x, y in zip(a.state_dict().values(),
                                                     b.state_dict().values(), strict=True))  # fmt: skip


def test_rewriter_trains_only_on_queries_that_hit(tiny):
    cfg = dataclasses.replace(tiny, rewriter_samples=2, rewriter_steps=2)
    world, codec, policy = build(cfg)
    questions = world.train[:8]
    blind = make_retriever("bm25", ["zzz nothing here", "yyy nor here"])
    rewriter, solved = train_rewriter(policy, codec, blind, questions, cfg)
    assert solved == 0.0 and not _changed(policy, rewriter)  # no feedback, no update
    answers = " ".join(q.answers[0] for q in questions)
    oracle = make_retriever("bm25", [answers, "zzz"])
    cfg = dataclasses.replace(cfg, top_k=2)  # every query's documents hold every answer
    rewriter, solved = train_rewriter(policy, codec, oracle, questions, cfg)
    assert solved > 0 and _changed(policy, rewriter)


def test_classifier_probability_is_monotone_in_evidence(tiny):
    world, _, _ = build(tiny)
    labels = np.array([q.head is False for q in world.train])
    clf = RetrievalClassifier(world.train, labels, 0)
    p = clf.probability(world.train)
    assert ((p > 0.5) == labels).mean() > 0.8
    const = RetrievalClassifier(world.train, np.ones(len(world.train), bool), 0)
    assert np.all(const.probability(world.test) == 1.0)
