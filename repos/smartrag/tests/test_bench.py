"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from smartrag.bench import run_bench


def test_bench_writes_schema(tiny):
    doc = run_bench(dataclasses.replace(tiny, alpha_sweep=(0.5,)))
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
    assert len(doc["metrics"]) >= 2
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert {c["id"] for c in doc["claims"]} >= {
        "smartrag-beats-sft-only",
        "smartrag-beats-modular",
        "retrieves-on-tail-not-head",
        "rewriter-finds-answers",
    }
    for c in doc["claims"]:  # every claim names its negative controls and the control results
        assert c["negative_control"] and c["controls"]
        assert all(isinstance(ctl["passes_check"], bool) for ctl in c["controls"])
    assert doc["tuning"]["grid"]["tau"] and "smartrag_alpha0.5" in doc["metrics"]
    assert {"oracle", "majority", "smartrag_shuffled_docs"} <= set(doc["metrics"])
    assert doc["metrics"]["smartrag"]["em"]["values"].__len__() == len(tiny.seeds)
    assert (Path(tiny.results_dir) / "figures" / "quick_metrics.png").exists()
    assert any(p["id"] == "rollout-throughput" for p in doc["performance"])
