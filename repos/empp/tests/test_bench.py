"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from empp.bench import ARMS, LABELS, claims_from, run_bench


def test_bench_writes_schema(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    for key in ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics"):
        assert key in doc
    assert set(doc["metrics"]) == {LABELS[a] for arms in ARMS.values() for a in arms}
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert {p["id"] for p in doc["performance"]} == {"empp-overhead", "empp-vs-schnet"}
    assert (Path(tiny.results_dir) / "figures" / "arms.png").stat().st_size > 0


def fake_metrics(empp_mae: float) -> dict:
    def s(v):
        return {"mean": v, "std": 0.0, "values": [v]}

    m = {LABELS[a]: {"qm9_mae": s(1.0), "md_force_mae": s(2.0)} for a in LABELS}
    m[LABELS["empp"]] |= {
        "qm9_mae": s(empp_mae),
        "qm9_pos_error": s(0.5),
        "qm9_centroid_error": s(1.0),
    }
    return m


def test_quick_gate_threshold_is_computed(tiny):
    holds = {c["id"]: c["holds"] for c in claims_from(fake_metrics(1.04), tiny)}
    assert holds["empp-not-worse-than-supervised"] and holds["empp-head-reconstructs-position"]
    assert holds["empp-pretraining-not-worse"]
    holds = {c["id"]: c["holds"] for c in claims_from(fake_metrics(1.06), tiny)}
    assert not holds["empp-not-worse-than-supervised"]
