"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from smartrag.bench import run_bench


def test_bench_writes_schema(tiny):
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
    assert len(doc["metrics"]) >= 2
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert {c["id"] for c in doc["claims"]} >= {
        "smartrag-beats-sft-only",
        "retrieves-on-tail-not-head",
        "rewriter-finds-answers",
    }
    assert doc["metrics"]["smartrag"]["em"]["values"].__len__() == len(tiny.seeds)
    assert (Path(tiny.results_dir) / "figures" / "quick_metrics.png").exists()
    assert any(p["id"] == "rollout-throughput" for p in doc["performance"])
