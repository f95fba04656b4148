"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from __package__.bench import run_bench


def test_bench_writes_schema(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    assert len(doc["metrics"]) >= 2
    assert all(c["verdict"] in ("holds", "contradicted", "inconclusive") for c in doc["claims"])


def test_seeds_as_separate_jobs_merge_to_the_same_results(tiny, tmp_path):
    """Two partial files (one seed each) merged = one bench over both seeds (tools/launch.py)."""
    whole = run_bench(dataclasses.replace(tiny, seeds=(0, 1)))
    parts = []
    for seed in (0, 1):
        part = tmp_path / f"part{seed}.json"
        run_bench(dataclasses.replace(tiny, seeds=(seed,), partial_out=str(part)))
        parts.append(str(part))
    merged = run_bench(
        dataclasses.replace(tiny, merge=tuple(parts), results_dir=str(tmp_path / "m"))
    )
    # equal up to float rounding (BLAS may sum in another order from one call to the next)
    for method, metrics in whole["metrics"].items():
        for name, summary in metrics.items():
            got = merged["metrics"][method][name]["values"]
            assert got == pytest.approx(summary["values"], rel=1e-9), (method, name)
    assert [c["verdict"] for c in merged["claims"]] == [c["verdict"] for c in whole["claims"]]
    assert merged["seeds"] == [0, 1]
