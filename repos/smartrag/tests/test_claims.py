"""The evidence machinery: paired intervals, claims that fail on their negative controls, the
floor and the head/tail label shuffle."""

from __future__ import annotations

import copy

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


def _by_id(metrics):
    return {c["id"]: c for c in claims_from(metrics)}


MAIN = ("smartrag-beats-sft-only", "smartrag-beats-modular", "retrieves-on-tail-not-head",
        "rewriter-finds-answers")  # fmt: skip


def test_claims_hold_on_a_clear_effect_and_fail_without_it():
    good = _metrics([80, 82, 81], [50, 52, 49], [60, 61, 59], [100, 100, 100],
                    [10, 12, 11], [95, 96, 97], [100, 100, 100], [90, 91, 92])  # fmt: skip
    held = _by_id(good)
    assert all(held[c]["verdict"] == "holds" and held[c]["holds"] for c in MAIN)
    controls = [c for c in held.values() if c.get("control_of")]
    assert len(controls) == 5 and not any(c["holds"] for c in controls)
    assert held["smartrag-beats-sft-only-control-smartrag-shuffled-docs"]["verdict"] == (
        "contradicted"
    )
    for c in held.values():
        assert c["test"] and all(p["n"] == 3 for p in c["test"]), c
    # no effect: SmartRAG equal to SFT-only within noise, same head/tail behaviour
    none = _metrics([50, 53, 49], [50, 52, 49], [100, 99, 100], [100, 100, 100],
                    [100, 100, 100], [100, 100, 100], [100, 100, 100], [20, 23, 21])  # fmt: skip
    assert not any(_by_id(none)[c]["holds"] for c in MAIN)


def test_claim_parts_and_directions():
    """EM must clear the margin, retrieval must fall; tail must exceed head, not the reverse."""
    m = _metrics([80, 82, 81], [50, 52, 49], [60, 61, 59], [100, 100, 100],
                 [10, 12, 11], [95, 96, 97], [100, 100, 100], [90, 91, 92])  # fmt: skip
    em, rate = _by_id(m)["smartrag-beats-sft-only"]["test"]
    assert em["estimate"] == pytest.approx(30.667, abs=1e-3) and em["threshold"] == 3.0
    assert em["direction"] == ">" and rate["direction"] == "<"
    assert rate["estimate"] == pytest.approx(-40.0)
    # more retrieval than SFT-only contradicts the claim
    m2 = _metrics([80, 82, 81], [50, 52, 49], [100, 100, 100], [60, 61, 59],
                  [10, 12, 11], [95, 96, 97], [100, 100, 100], [90, 91, 92])  # fmt: skip
    assert _by_id(m2)["smartrag-beats-sft-only"]["verdict"] == "contradicted"
    # head and tail swapped: the policy retrieves on head questions
    m3 = _metrics([80, 82, 81], [50, 52, 49], [60, 61, 59], [100, 100, 100],
                  [95, 96, 97], [10, 12, 11], [100, 100, 100], [90, 91, 92])  # fmt: skip
    c = _by_id(m3)["retrieves-on-tail-not-head"]
    assert c["verdict"] == "contradicted"
    head, tail, gap = c["test"]
    assert head["estimate"] == pytest.approx(96.0) and tail["estimate"] == pytest.approx(11.0)
    assert gap["estimate"] == pytest.approx(-85.0)


def test_inconclusive_on_two_seeds_and_noisy_effects():
    m = _metrics([80, 82, 81], [50, 52, 49], [60, 61, 59], [100, 100, 100],
                 [10, 12, 11], [95, 96, 97], [100, 100, 100], [90, 91, 92])  # fmt: skip
    for row in m.values():
        for d in row.values():
            d["values"] = d["values"][:2]
    for c in MAIN:  # two seeds never hold, however clear
        assert _by_id(m)[c]["verdict"] != "holds"
    noisy = _metrics([80, 40, 70], [50, 52, 49], [60, 61, 59], [100, 100, 100],
                     [10, 12, 11], [95, 96, 97], [100, 100, 100], [90, 91, 92])  # fmt: skip
    c = _by_id(noisy)["smartrag-beats-modular"]
    assert c["verdict"] == "inconclusive" and c["seeds_needed"] > 3


def test_claim_fails_when_its_control_passes():
    # made-up metrics where SFT-only already splits head from tail: its control claim holds
    m = _metrics([80, 82, 81], [50, 52, 49], [60, 61, 59], [100, 100, 100],
                 [10, 12, 11], [95, 96, 97], [5, 6, 4], [90, 91, 92])  # fmt: skip
    m["sft_only"]["retrieval_rate_tail"]["values"] = [95.0, 96.0, 94.0]
    m["sft_only"]["retrieval_rate_tail"]["mean"] = 95.0
    claims = _by_id(m)
    ctl = claims["retrieves-on-tail-not-head-control-sft-only"]
    assert ctl["holds"] and ctl["control_of"] == "retrieves-on-tail-not-head"
    listed = claims["retrieves-on-tail-not-head"]["negative_controls"]
    assert {"id": ctl["id"], "verdict": "holds"} in listed


def test_tuned_protocol_claims_read_the_tuned_rows():
    m = _metrics([80, 82, 81], [50, 52, 49], [60, 61, 59], [100, 100, 100],
                 [10, 12, 11], [95, 96, 97], [100, 100, 100], [90, 91, 92])  # fmt: skip
    for row in ("smartrag", "sft_only", "modular"):
        m[row + "_tuned"] = m[row]
    low = [40.0, 41.0, 38.0]
    m["smartrag_tuned"] = {**m["smartrag"], "em": {"mean": 39.7, "std": 0.0, "values": low}}
    claims = _by_id(m)
    assert claims["smartrag-beats-modular"]["verdict"] == "holds"
    assert claims["smartrag-beats-modular-tuned-tau"]["verdict"] == "contradicted"


def test_majority_floor_and_label_shuffle():
    train = [Question("a", ("x",), relation=0), Question("b", ("x",), relation=0),
             Question("c", ("y",), relation=0)]  # fmt: skip
    test = [Question("d", ("x",), relation=0), Question("e", ("y",), relation=0)]
    assert majority_floor(train, test)["em"] == 50.0
    qs = [Question(str(i), ("v",), head=i < 50) for i in range(100)]
    out = [Outcome(searches=int(not q.head)) for q in qs]
    shuffled = head_tail_shuffled(qs, out, 0)
    assert 20 < shuffled["retrieval_rate_head_shuffled_labels"] < 80  # the split is gone


def _with_no_rewrite_rows(m, gain):
    """The p_rewrite = 0 control's rows: SFT-only's query hit rates, SmartRAG's `gain` points
    above."""
    base = [20.0, 22.0, 21.0]
    rows = {"sft_only_no_rewrite": base, "smartrag_no_rewrite": [b + g for b, g in zip(base, gain)]}
    for name, hit in rows.items():
        m[name] = {**m["sft_only"], "query_hit_rate": {"mean": float(np.mean(hit)), "std": 0.0,
                                                       "values": hit}}  # fmt: skip
    return m


def test_no_gold_rewrite_control_voids_the_rewriter_claim_only_without_a_gain():
    """Without gold rewrites in SFT, no hit-rate gain: the control holds (the claim's gain needs
    the seeded rewrites); a clear gain contradicts it (RL finds better queries by itself)."""
    args = ([80, 82, 81], [50, 52, 49], [60, 61, 59], [100, 100, 100], [10, 12, 11],
            [95, 96, 97], [100, 100, 100], [90, 91, 92])  # fmt: skip
    cid = "rewriter-finds-answers-control-no-gold-rewrites"
    none = _by_id(_with_no_rewrite_rows(_metrics(*args), [0.5, -1.0, 0.0]))
    ctl = none[cid]
    assert ctl["role"] == "control" and ctl["control_of"] == "rewriter-finds-answers"
    assert ctl["verdict"] == "holds" and ctl["statement"].startswith("negative control")
    (p,) = ctl["test"]
    assert p["direction"] == "<" and p["threshold"] == 3.0
    assert p["estimate"] == pytest.approx(-1 / 6)
    assert {"id": cid, "verdict": "holds"} in none["rewriter-finds-answers"]["negative_controls"]
    found = _by_id(_with_no_rewrite_rows(_metrics(*args), [30.0, 35.0, 32.0]))[cid]
    assert found["verdict"] == "contradicted" and found["test"][0]["estimate"] == pytest.approx(
        32.333, abs=1e-3
    )
    assert cid not in _by_id(_metrics(*args))  # not run: no control claim


def test_tuned_protocol_claims_carry_their_own_controls():
    """Each -tuned-tau claim has the controls of its fixed-tau twin, read from the tuned rows."""
    m = _metrics([80, 82, 81], [50, 52, 49], [60, 61, 59], [100, 100, 100],
                 [10, 12, 11], [95, 96, 97], [100, 100, 100], [90, 91, 92])  # fmt: skip
    _with_no_rewrite_rows(m, [30.0, 35.0, 32.0])
    for row in ("smartrag", "sft_only", "modular", "smartrag_shuffled_docs",
                "sft_only_no_rewrite", "smartrag_no_rewrite"):  # fmt: skip
        m[row + "_tuned"] = copy.deepcopy(m[row])
    # the tuned shuffled-documents run finds the answer as often as SmartRAG: its control holds
    m["smartrag_shuffled_docs_tuned"]["hit_rate"] = copy.deepcopy(m["smartrag"]["hit_rate"])
    m["sft_only_no_rewrite_tuned"]["query_hit_rate"]["values"] = [60.0, 60.0, 60.0]  # no gain
    claims = _by_id(m)
    for cid in MAIN:
        tuned = claims[cid + "-tuned-tau"]
        fixed = {n["id"].replace(cid, "") for n in claims[cid]["negative_controls"]}
        assert {n["id"].replace(cid + "-tuned-tau", "") for n in tuned["negative_controls"]} == (
            fixed
        )
        for n in tuned["negative_controls"]:
            assert claims[n["id"]]["control_of"] == cid + "-tuned-tau"
    rid = "rewriter-finds-answers"
    assert claims[f"{rid}-control-smartrag-shuffled-docs"]["verdict"] == "contradicted"
    assert claims[f"{rid}-tuned-tau-control-smartrag-shuffled-docs"]["verdict"] == "holds"
    assert claims[f"{rid}-control-no-gold-rewrites"]["verdict"] == "contradicted"
    assert claims[f"{rid}-tuned-tau-control-no-gold-rewrites"]["verdict"] == "holds"
