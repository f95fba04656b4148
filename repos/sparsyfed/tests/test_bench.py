"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from sparsyfed.bench import compute_claims, label, run_bench


def test_bench_writes_schema(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    for key in ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics"):
        assert key in doc
    assert (
        len(doc["metrics"]) == 14
    )  # 5 headline + 2 at s=0.95 + 3 at alpha=1000 + 4 with GroupNorm
    assert "SparsyFed (alpha=0.1, s=0.9, mlp_gn)" in doc["metrics"]
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert {p["id"] for p in doc["performance"]} >= {"upload-nonzeros-s0.9"}
    assert (Path(tiny.results_dir) / "figures" / "quick_curves.png").stat().st_size > 0


def test_claims_follow_the_metrics(tiny):
    """Claims are computed from metrics: flipping the numbers flips the verdicts."""

    def metrics(acc_sf, acc_tk, rg_sf, rg_tk):
        m = {}
        for meth, s, acc, rg in [
            ("dense", 0.9, 0.90, 0.0),
            ("sparsyfed", 0.9, acc_sf, rg_sf),
            ("topk", 0.9, acc_tk, rg_tk),
            ("sparsyfed", 0.95, acc_sf, rg_sf),
        ]:
            m[label(meth, 0.1, s)] = {
                "accuracy": {"mean": acc},
                "mean_regrowth": {"mean": rg},
            }
        return m

    good = {c["id"]: c["holds"] for c in compute_claims(tiny, metrics(0.89, 0.80, 1e-5, 1e-3))}
    bad = {c["id"]: c["holds"] for c in compute_claims(tiny, metrics(0.80, 0.85, 1e-4, 2e-4))}
    assert all(good.values()) and not any(bad.values())
