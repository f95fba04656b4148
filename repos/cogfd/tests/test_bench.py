"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from cogfd.bench import run_bench
from cogfd.claims import claims_from, interval
from cogfd.judge import AGREEMENT_PROMPTS


def test_bench_writes_schema(tiny):
    cfg = dataclasses.replace(tiny, methods=("original", "cogfd", "esd_x", "uce"))
    doc = run_bench(cfg)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    assert {c["id"] for c in doc["claims"]} == {
        "cogfd-forget-drop",
        "cogfd-retains-sub-concepts",
        "cogfd-pareto-dominates",
    }
    assert all(c["verdict"] in ("holds", "contradicted", "inconclusive") for c in doc["claims"])
    assert (Path(tiny.results_dir) / "figures" / "quick_pareto.png").exists()
    agree = doc["judge_agreement"]
    assert set(agree["per_prompt"]) == set(AGREEMENT_PROMPTS) and 0 <= agree["shape_agree"] <= 100
    grid = doc["tuning"]["methods"]["cogfd"]
    assert len(grid["forget_drop"]) == len(grid["retain_drop"]) == len(tiny.lr_grid)
    assert (Path(tiny.results_dir) / "figures" / "quick_samples.png").exists()
    assert {p["peer"] for p in doc["performance"]} >= {"esd_x", "uce"}
    assert "cogfd_t900-1000" in doc["metrics"]  # the window ablation, reported only
    assert doc["tuning"]["methods"]["cogfd"]["chosen"] in tiny.lr_grid
    assert doc["tuning"]["methods"]["uce"]["field"] == "uce_lambda"


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    """The committed results/ is written only when asked for (--results-dir results)."""
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(
        tiny, results_dir="", methods=("original", "cogfd"), window_ablation=(), steps_ablation=()
    )
    run_bench(cfg)
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["mode"] == "quick"
    assert (tmp_path / "runs" / "quick" / "figures" / "quick_metrics.png").exists()
    assert not (tmp_path / "results").exists()


def _metrics(seeds=6, **per_method):
    """Per-seed metrics: each method gets (forget_rate, held_out, retain_sub, retain_other) as
    constants plus a small per-seed jitter; drops against `original` are derived as bench does."""
    jitter = [0.0, 0.5, -0.5, 1.0, -1.0, 0.2][:seeds]
    keys = ("forget_rate", "forget_rate_held_out", "retain_acc_sub", "retain_acc_other")
    raw = {
        m: {k: [v + j for j in jitter] for k, v in zip(keys, vals, strict=True)}
        for m, vals in per_method.items()
    }
    for d in raw.values():
        d["retain_acc"] = [(a + b) / 2 for a, b in zip(d["retain_acc_sub"], d["retain_acc_other"])]
    o = raw["original"]
    for d in raw.values():
        d["forget_drop"] = [a - b for a, b in zip(o["forget_rate"], d["forget_rate"])]
        d["retain_drop"] = [a - b for a, b in zip(o["retain_acc"], d["retain_acc"])]
    return {m: {k: {"values": v} for k, v in d.items()} for m, d in raw.items()}


ORIGINAL = (90, 85, 95, 90)


def test_claims_follow_the_paired_tests_and_controls_fail():
    good = _metrics(
        original=ORIGINAL,
        cogfd=(20, 25, 92, 86),
        cogfd_noerase=(88, 84, 95, 90),
        esd_x=(30, 40, 60, 70),
        uce=(60, 60, 90, 84),
        naive=(50, 60, 40, 60),
    )
    claims = claims_from(good)
    assert [c["id"] for c in claims] == [
        "cogfd-forget-drop",
        "cogfd-retains-sub-concepts",
        "cogfd-pareto-dominates",
    ]
    assert [c["verdict"] for c in claims] == ["holds"] * 3
    assert all(c["negative_control"]["fails_as_expected"] for c in claims)
    assert claims[1]["negative_control"]["verdict"] == "contradicted"  # naive loses "red"
    # the held-out synonyms are a part of the forget claim; the pareto claim has 2 per rival
    assert len(claims[0]["test"]) == 2 and len(claims[2]["test"]) == 2 * 3
    assert {p["direction"] for p in claims[2]["test"]} == {">", "<"}
    # a rival that erases more but keeps less: no dominance either way -> contradicted
    traded = _metrics(original=ORIGINAL, cogfd=(20, 25, 92, 86), esd_x=(5, 5, 60, 70))
    assert claims_from(traded)[2]["verdict"] == "contradicted"
    # a rival that matches CoGFD exactly (up to noise): not decided
    tied = _metrics(original=ORIGINAL, cogfd=(20, 25, 92, 86), uce=(20, 25, 92, 86))
    tied["uce"]["forget_drop"]["values"][0] += 3.0
    assert claims_from(tied)[2]["verdict"] == "inconclusive"
    # on two seeds nothing holds, however clear the difference
    few = _metrics(seeds=2, original=ORIGINAL, cogfd=(20, 25, 92, 86))
    assert [c["verdict"] for c in claims_from(few)][:2] == ["inconclusive"] * 2


def test_forget_claim_without_held_out_synonyms_uses_the_erase_set_only():
    m = _metrics(original=ORIGINAL, cogfd=(20, 25, 92, 86))
    for d in m.values():
        d.pop("forget_rate_held_out")
    test = claims_from(m)[0]["test"]
    assert len(test) == 1 and "erase set" in test[0]["what"]


def test_bootstrap_interval_brackets_the_mean():
    mean, lo, hi = interval([1.0, 2.0, 3.0, 4.0])
    assert lo < mean == 2.5 < hi and interval([2.0] * 5)[1:] == (2.0, 2.0)
