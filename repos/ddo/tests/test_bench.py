"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from ddo.bench import run_bench


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
    assert len(doc["metrics"]) >= 2 and len(doc["claims"]) == 4
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert {p["id"] for p in doc["performance"]} == {
        "seconds-per-aligned-sample",
        "effective-sample-size",
    }
    figures = {p.name for p in (Path(tiny.results_dir) / "figures").glob("*.png")}
    assert figures == {"samples.png", "da_objective.png", "mode_tv.png"}
