"""The evidence machinery: paired intervals, claims that fail on their negative controls, the
floor and the head/tail label shuffle."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from smartrag.baselines import majority_floor
from smartrag.bench import claims_from, interval
from smartrag.data import Question
from smartrag.evaluation import head_tail_shuffled
from smartrag.rollout import Outcome


def test_t_interval_matches_scipy_and_needs_two_seeds():
    d = [4.0, 6.0, 5.0, 9.0]
    iv = interval(d)
    lo, hi = stats.t.interval(0.95, len(d) - 1, loc=np.mean(d), scale=stats.sem(d))
    assert iv["t"] == pytest.approx([lo, hi]) and iv["mean"] == pytest.approx(6.0)
    assert iv["bootstrap"][0] >= min(d) and iv["bootstrap"][1] <= max(d)
    assert interval([3.0])["t"] == [None, None]


def _metrics(smart_em, sft_em, smart_rate, sft_rate, head, tail, sft_head, hit):
    def m(values):
        return {"mean": float(np.mean(values)), "std": 0.0, "values": list(map(float, values))}

    row = lambda em, rate, h, t, hr: {
        "em": m(em), "retrieval_rate": m(rate), "hit_rate": m(hr),
        "retrieval_rate_head": m(h), "retrieval_rate_tail": m(t),
        "retrieval_rate_head_shuffled_labels": m([60, 62, 61]),
        "retrieval_rate_tail_shuffled_labels": m([61, 60, 62]),
    }  # fmt: skip
    return {
        "smartrag": row(smart_em, smart_rate, head, tail, hit),
        "sft_only": row(sft_em, sft_rate, sft_head, [100, 100, 100], [20, 22, 21]),
        "modular": row(sft_em, sft_rate, sft_head, [100, 100, 100], [20, 22, 21]),
        "smartrag_shuffled_docs": row([20, 22, 19], smart_rate, head, tail, [3, 2, 4]),
    }


def test_claims_hold_on_a_clear_effect_and_fail_without_it():
    good = _metrics([80, 82, 81], [50, 52, 49], [60, 61, 59], [100, 100, 100],
                    [10, 12, 11], [95, 96, 97], [100, 100, 100], [90, 91, 92])  # fmt: skip
    held = {c["id"]: c for c in claims_from(good)}
    assert all(c["holds"] for c in held.values())
    assert all(not ctl["passes_check"] for c in held.values() for ctl in c["controls"])
    # no effect: SmartRAG equal to SFT-only within noise, same head/tail behaviour
    none = _metrics([50, 53, 49], [50, 52, 49], [100, 99, 100], [100, 100, 100],
                    [100, 100, 100], [100, 100, 100], [100, 100, 100], [20, 23, 21])  # fmt: skip
    assert not any(c["holds"] for c in claims_from(none))


def test_claim_fails_when_its_control_passes():
    # SFT-only already splits head from tail: the head/tail claim is not RL's doing
    m = _metrics([80, 82, 81], [50, 52, 49], [60, 61, 59], [100, 100, 100],
                 [10, 12, 11], [95, 96, 97], [5, 6, 4], [90, 91, 92])  # fmt: skip
    m["sft_only"]["retrieval_rate_tail"]["values"] = [95.0, 96.0, 94.0]
    m["sft_only"]["retrieval_rate_tail"]["mean"] = 95.0
    claim = {c["id"]: c for c in claims_from(m)}["retrieves-on-tail-not-head"]
    assert not claim["holds"] and claim["controls"][0]["passes_check"]


def test_majority_floor_and_label_shuffle():
    train = [Question("a", ("x",), relation=0), Question("b", ("x",), relation=0),
             Question("c", ("y",), relation=0)]  # fmt: skip
    test = [Question("d", ("x",), relation=0), Question("e", ("y",), relation=0)]
    assert majority_floor(train, test)["em"] == 50.0
    qs = [Question(str(i), ("v",), head=i < 50) for i in range(100)]
    out = [Outcome(searches=int(not q.head)) for q in qs]
    shuffled = head_tail_shuffled(qs, out, 0)
    assert 20 < shuffled["retrieval_rate_head_shuffled_labels"] < 80  # the split is gone
