"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json

from smartrag.bench import run_bench


def test_bench_writes_schema_under_runs_by_default(tiny, tmp_path, monkeypatch):
    """A real tiny bench with no results_dir, run from an empty folder: runs/quick/quick.json and
    its figure, and no results/ folder (the committed results are written only when asked)."""
    monkeypatch.chdir(tmp_path)
    doc = run_bench(dataclasses.replace(tiny, alpha_sweep=(0.5,), results_dir=""))
    where = tmp_path / "runs" / "quick"
    assert json.loads((where / "quick.json").read_text()) == doc
    assert not (tmp_path / "results").exists()
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
    assert (where / "figures" / "quick_metrics.png").exists()
    assert any(p["id"] == "rollout-throughput" for p in doc["performance"])
