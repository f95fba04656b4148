"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from stch_set.bench import compute_claims, run_bench


def test_bench_writes_schema_claims_performance_and_figures(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    for key in (
        "paper",
        "mode",
        "created",
        "environment",
        "wall_seconds",
        "seeds",
        "metrics",
        "claims",
    ):
        assert key in doc
    assert {"STCH-Set", "TCH-Set", "SoM", "NSGA-III + greedy K"} <= set(doc["metrics"])
    assert len(doc["metrics"]["STCH-Set"]["quadratic/worst"]["values"]) == 2
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert {p["id"] for p in doc["performance"]} >= {"step-quadratic", "time-to-official-worst"}
    assert len(list((Path(tiny.results_dir) / "figures").glob("*.png"))) == 3


def test_claims_follow_the_metrics(tiny):
    def metrics(stch: float) -> dict:
        out = {}
        for label, worst in [
            ("STCH-Set", stch),
            ("TCH-Set", 1.0),
            ("SoM", 2.0),
            ("STCH (random pref)", 3.0),
            ("TCH (random pref)", 3.0),
            ("LS (random pref)", 3.0),
        ]:
            out[label] = {
                f"{p}/{key}": {"mean": worst} for p in tiny.problems for key in ("worst", "average")
            }
        return out

    good = {c["id"]: c["holds"] for c in compute_claims(tiny, metrics(0.5))}
    bad = {c["id"]: c["holds"] for c in compute_claims(tiny, metrics(3.0))}
    assert good["lowest-worst-quadratic"] and good["quadratic-1.5x-and-below-tch-set"]
    assert not bad["lowest-worst-quadratic"] and not bad["quadratic-1.5x-and-below-tch-set"]
    assert good["average-within-1.3x-of-som"] and not bad["average-within-1.3x-of-som"]
