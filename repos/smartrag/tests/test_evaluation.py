"""The decision threshold: the paper's fixed tau first, then tau tuned on the validation split by
the paper's reward (EM + F1 - alpha x retrieval) and only then applied to test."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from smartrag import evaluation
from smartrag.data import Question
from smartrag.evaluation import TAUS, Branches, selection_reward, tuned
from smartrag.rollout import Outcome


def branches(search_em: float, answer_em: float) -> Branches:
    """One question whose searching and answering outcomes are fixed."""
    q = Question("what", ("red",))
    return Branches(
        [q],
        [Outcome(em=search_em, f1=search_em, searches=1)],
        [Outcome(em=answer_em, f1=answer_em)],
    )


def test_fixed_tau_is_primary_and_tau_is_tuned_on_validation_only():
    """Score 0.6 > tau = 0.5: the primary protocol searches (test EM 100). Validation rewards
    answering closed-book, test rewards searching: the tuned tau must be validation's (the
    largest that never retrieves), so its test EM is 0 although another tau scores 100 there
    (choosing on test would leak it into the tuning)."""
    score = np.array([0.6])
    fixed, out, on_val = tuned(branches(0.0, 1.0), branches(1.0, 0.0), score, score, 0.5, 0.2)
    assert fixed["tau"] == 0.5 and fixed["em"] == 100.0 and fixed["retrieval_rate"] == 100.0
    assert out[0].searches == 1
    assert on_val["tau"] == max(TAUS) and on_val["em"] == 0.0 and on_val["retrieval_rate"] == 0.0
    assert fixed["em@tau0.1"] == 100.0 and fixed["em@tau0.9"] == 0.0


def test_fixed_tau_follows_the_threshold_argument():
    score = np.array([0.6])
    fixed, _, _ = tuned(branches(1.0, 0.0), branches(1.0, 0.0), score, score, 0.7, 0.0)
    assert fixed["tau"] == 0.7 and fixed["retrieval_rate"] == 0.0


def test_tuning_reward_charges_each_retrieval():
    """Searching is right (EM 1) and answering wrong: at alpha = 0 the tuned tau retrieves; at a
    retrieval cost above EM + F1 (alpha = 3 > 2) it does not."""
    score = np.array([0.6])
    val, test = branches(1.0, 0.0), branches(1.0, 0.0)
    assert tuned(val, test, score, score, 0.5, 0.0)[2]["retrieval_rate"] == 100.0
    assert tuned(val, test, score, score, 0.5, 3.0)[2]["retrieval_rate"] == 0.0
    m = {"em": 50.0, "f1": 60.0, "retrieval_rate": 40.0}
    assert selection_reward(m, 0.5) == 90.0


def test_policy_rows_keep_each_protocols_own_outcomes(monkeypatch):
    """A policy scoring 0.6 everywhere, where searching is wrong and answering right: at the fixed
    tau = 0.5 it searches every question, at the validation-tuned tau it searches none; each
    protocol's outcomes (read by its shuffled-documents and shuffled-label controls) are its own."""
    qs = [Question(str(i), ("red",), head=i < 2) for i in range(4)]

    def play(cls, policy, codec, retriever, questions, cfg):
        return Branches(questions, [Outcome(searches=1, hit=i % 2 == 0) for i in range(4)],
                        [Outcome(em=1.0, f1=1.0) for _ in questions])  # fmt: skip

    monkeypatch.setattr(evaluation.Branches, "play", classmethod(play))
    monkeypatch.setattr(evaluation, "decision_scores", lambda *a: np.full(len(qs), 0.6))
    world = SimpleNamespace(val=qs, test=qs)
    rows = evaluation.evaluate_policy(None, None, None, world, SimpleNamespace(tau=0.5, alpha=0.2,
                                                                             seed=0))  # fmt: skip
    assert rows.fixed["retrieval_rate"] == 100.0 and all(o.searches for o in rows.out)
    assert rows.tuned["tau"] == max(TAUS) and rows.tuned["retrieval_rate"] == 0.0
    assert not any(o.searches for o in rows.tuned_out)
    assert rows.fixed["retrieval_rate_head_shuffled_labels"] == 100.0
    assert rows.tuned["retrieval_rate_head_shuffled_labels"] == 0.0
    # the queries' hit rate with every question searched does not depend on the decision
    assert rows.fixed["query_hit_rate"] == rows.tuned["query_hit_rate"] == 50.0
