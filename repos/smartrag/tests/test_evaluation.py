"""The decision threshold's tuning: tau is chosen on the validation split, then applied to test."""

from __future__ import annotations

import numpy as np

from smartrag.data import Question
from smartrag.evaluation import TAUS, Branches, tuned
from smartrag.rollout import Outcome


def branches(search_em: float, answer_em: float) -> Branches:
    """One question whose searching and answering outcomes are fixed."""
    q = Question("what", ("red",))
    return Branches([q], [Outcome(em=search_em, searches=1)], [Outcome(em=answer_em)])


def test_tau_is_tuned_on_validation_and_only_then_applied_to_test():
    """Validation rewards answering closed-book, test rewards searching: the tuned tau must be
    validation's (the largest that never retrieves), so test EM is 0 although another tau would
    score 100 there (choosing on test would leak it into the tuning)."""
    score = np.array([0.5])
    metrics, _ = tuned(branches(0.0, 1.0), branches(1.0, 0.0), score, score)
    assert metrics["tau"] == max(TAUS) and metrics["em"] == 0.0
    assert metrics["em@tau0.1"] == 100.0 and metrics["retrieval_rate"] == 0.0
