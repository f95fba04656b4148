"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from sde_causal.bench import make_claims, run_bench


def test_bench_writes_schema_performance_and_figures(tiny):
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
    assert [p["id"] for p in doc["performance"]] == ["gram-8x8"]
    assert "max |ours - peer| = " in doc["performance"][0]["what"]
    assert sorted(p.name for p in (Path(tiny.results_dir) / "figures").glob("*.png")) == [
        "ci_tests.png",
        "shd.png",
    ]


def _metrics(sig: dict, base: dict) -> dict:
    out = {}
    for m in ("SigKer-CI", "KCI-flat", "ParCorr-incr", "Granger", "PCMCI"):
        vals = sig if m == "SigKer-CI" else base
        out[m] = {k: {"mean": v} for k, v in vals.items()}
    return out


def test_claims_follow_the_thresholds():
    good = _metrics(
        {"type1": 0.06, "power_drift": 0.9, "power_diffusion": 0.7, "shd": 1.0},
        {"type1": 0.05, "power_drift": 0.92, "power_diffusion": 0.1, "shd": 2.0},
    )
    assert all(c["holds"] for c in make_claims(good))
    bad = _metrics(
        {"type1": 0.2, "power_drift": 0.5, "power_diffusion": 0.1, "shd": 3.0},
        {"type1": 0.05, "power_drift": 0.9, "power_diffusion": 0.1, "shd": 2.0},
    )
    assert not any(c["holds"] for c in make_claims(bad))
