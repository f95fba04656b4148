"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from __package__.bench import run_bench


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
    assert all(c["verdict"] in ("holds", "contradicted", "inconclusive") for c in doc["claims"])
