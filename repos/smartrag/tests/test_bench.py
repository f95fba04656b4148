"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json

from smartrag.bench import run_bench


def test_bench_writes_schema_under_runs_by_default(tiny, tmp_path, monkeypatch):
    """A real tiny bench with no results_dir, run from an empty folder, two seeds in two spawned
    processes: runs/quick/quick.json and its figure, and no results/ folder (the committed
    results are written only when asked); each seed's numbers are its own run's."""
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(
        tiny, alpha_sweep=(0.5,), results_dir="", workers=2, rewrite_control=True
    )
    doc = run_bench(cfg)
    where = tmp_path / "runs" / "quick"
    assert json.loads((where / "quick.json").read_text()) == doc
    assert not (tmp_path / "results").exists()
    assert len(doc["metrics"]) >= 2
    assert {c["id"] for c in doc["claims"]} >= {
        "smartrag-beats-sft-only",
        "smartrag-beats-modular",
        "retrieves-on-tail-not-head",
        "rewriter-finds-answers",
    }
    by_id = {c["id"]: c for c in doc["claims"]}
    for c in doc["claims"]:  # structured three-way verdicts; controls are claims of their own
        assert c["verdict"] in ("holds", "contradicted", "inconclusive") and c["test"]
        assert c["holds"] == (c["verdict"] == "holds")
        if c.get("control_of"):
            assert c["role"] == "control" and c["statement"].startswith(
                "negative control, must not hold"
            )
        else:  # every claim, under either protocol, has its controls
            assert c["negative_controls"]
            assert all(by_id[n["id"]]["control_of"] == c["id"] for n in c["negative_controls"])
    for protocol in ("", "-tuned-tau"):  # the p_rewrite = 0 control run's claim
        assert f"rewriter-finds-answers{protocol}-control-no-gold-rewrites" in by_id
    assert {"smartrag_no_rewrite", "sft_only_no_rewrite_tuned"} <= set(doc["metrics"])
    assert {"smartrag-beats-sft-only-tuned-tau", "rewriter-finds-answers-tuned-tau"} <= set(by_id)
    assert {"smartrag_tuned", "sft_only_tuned", "modular_tuned"} <= set(doc["metrics"])
    assert doc["metrics"]["smartrag"]["tau"]["values"] == [0.5] * len(tiny.seeds)
    assert doc["tuning"]["grid"]["tau"] and "smartrag_alpha0.5" in doc["metrics"]
    assert {"oracle", "majority", "smartrag_shuffled_docs"} <= set(doc["metrics"])
    assert doc["metrics"]["smartrag"]["em"]["values"].__len__() == len(tiny.seeds)
    assert (where / "figures" / "quick_metrics.png").exists()
    seed1 = json.loads((tmp_path / "runs" / "seed1" / "metrics.json").read_text())
    assert doc["metrics"]["smartrag"]["em"]["values"][1] == seed1["smartrag/em"]
    assert any(p["id"] == "rollout-throughput" for p in doc["performance"])
