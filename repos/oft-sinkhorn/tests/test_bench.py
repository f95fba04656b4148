"""The benchmark writes the results schema, figures, and claims that follow from its metrics."""

from __future__ import annotations

import json
from pathlib import Path

from oft_sinkhorn.bench import POT_TOL, run_bench


def test_bench_writes_schema_claims_and_figures(tiny):
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
    assert {"OFT-Sinkhorn", "OR-Tools", "networkx", "HiGHS", "POT"} <= set(doc["metrics"])
    claims = {c["id"]: c for c in doc["claims"]}
    assert set(claims) == {
        "pot-equality",
        "gap-under-1pct",
        "gap-monotone-in-eps",
        "capacity-feasible",
    }
    assert all(isinstance(c["holds"], bool) and c["paper"] and c["ours"] for c in claims.values())
    pot_diffs = doc["metrics"]["OFT-Sinkhorn"]["bipartite/max_abs_diff"]["values"]
    assert claims["pot-equality"]["holds"] == (max(pot_diffs) < POT_TOL)
    assert any(p["id"] == "uniform-growth" for p in doc["performance"])
    for name in ("gap_vs_eps.png", "time_vs_n.png"):
        assert (Path(tiny.results_dir) / "figures" / name).stat().st_size > 0
