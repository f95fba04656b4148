"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from regent.bench import compute_claims, regroup, run_bench


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
    assert {"REGENT", "R&P", "MT-BC", "BC-scratch", "REGENT-no-interp"} <= set(doc["metrics"])
    assert len(doc["claims"]) == 3
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert any(p["id"].startswith("knn-") and p["peer_s"] > 0 for p in doc["performance"])
    assert (Path(tiny.results_dir) / "figures" / "return_vs_demos.png").exists()


def synthetic(tiny, regent, rp, mtbc, ablation):
    flat = {}
    for k, r, p, b in zip(tiny.demo_counts, regent, rp, mtbc):
        flat |= {f"REGENT/k{k}": r, f"R&P/k{k}": p, f"MT-BC/k{k}": b}
    flat |= {f"ablation/n{n}": v for n, v in zip(tiny.ablation_sizes, ablation)}
    return regroup([flat])


def test_claims_follow_the_metrics(tiny):
    good = compute_claims(
        tiny, synthetic(tiny, [0.5, 0.7], [0.4, 0.5], [0.1, 0.1], [0.2, 0.6, 0.62])
    )
    assert [c["holds"] for c in good] == [True, True, True]
    bad = compute_claims(
        tiny, synthetic(tiny, [0.5, 0.45], [0.6, 0.5], [0.1, 0.1], [0.2, 0.3, 0.6])
    )
    assert [c["holds"] for c in bad] == [False, False, False]
