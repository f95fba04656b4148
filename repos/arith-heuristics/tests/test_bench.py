"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from arith_heuristics.bench import claims_from, run_bench


def test_bench_writes_schema(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk["claims"] == doc["claims"]
    for key in ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics"):
        assert key in doc
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert len(doc["claims"]) == 5
    perf = doc["performance"][0]
    assert perf["ours_s"] > 0 and perf["peer_s"] > 0 and -1 <= perf["score_correlation"] <= 1
    assert (Path(tiny.results_dir) / "figures" / "quick_analysis.png").exists()


def test_claims_follow_the_metrics(tiny):
    def fake(**values):
        return {"BagOfHeuristics": {k: {"mean": v} for k, v in values.items()}}

    base = {
        "faith_curve_0": 0.9,
        "faith_curve_1": 0.95,
        "classified_share": 0.7,
        "random_map_classified_share": 0.1,
        "knockout_assoc_acc": 0.4,
        "knockout_unassoc_acc": 0.9,
        "guided_acc_0": 0.3,
        "guided_acc_1": 0.2,
        "random_acc_0": 0.8,
        "random_acc_1": 0.7,
        "overlap_ckpt_0": 0.2,
        "overlap_ckpt_1": 1.0,
    }
    assert all(c["holds"] for c in claims_from(fake(**base), tiny))
    worse = dict(
        base,
        faith_curve_0=0.5,
        classified_share=0.2,
        knockout_assoc_acc=0.95,
        guided_acc_1=0.75,
        overlap_ckpt_0=1.0,
        overlap_ckpt_1=0.5,
    )
    assert not any(c["holds"] for c in claims_from(fake(**worse), tiny))
