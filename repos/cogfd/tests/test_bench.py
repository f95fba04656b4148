"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from cogfd.bench import claims_from, run_bench


def test_bench_writes_schema(tiny):
    cfg = dataclasses.replace(tiny, methods=("original", "cogfd", "esd_x", "uce"))
    doc = run_bench(cfg)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    for key in ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics"):
        assert key in doc
    assert {c["id"] for c in doc["claims"]} == {
        "cogfd-forget-drop",
        "cogfd-retains-sub-concepts",
        "cogfd-best-erase-retain",
    }
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert (Path(tiny.results_dir) / "figures" / "quick_samples.png").exists()
    assert {p["peer"] for p in doc["performance"]} >= {"esd_x", "uce"}
    assert "cogfd_t900-1000" in doc["metrics"]  # the window ablation, reported only


def _metrics(**means):
    keys = (
        "forget_drop",
        "forget_drop_held_out",
        "retain_drop_sub",
        "retain_drop_other",
        "erase_retain_ratio",
        "forget_rate",
    )
    out = {}
    for method, values in means.items():
        out[method] = {k: {"mean": v} for k, v in zip(keys, values, strict=True)}
    return out


def test_claims_follow_the_thresholds():
    good = _metrics(
        original=(0, 0, 0, 0, 0, 90), cogfd=(60, 55, 5, 9, 4.0, 30), esd_x=(70, 20, 40, 5, 1.0, 20)
    )
    assert [c["holds"] for c in claims_from(good)] == [True, True, True]
    bad = _metrics(
        original=(0, 0, 0, 0, 0, 90), cogfd=(60, 45, 5, 11, 0.5, 30), esd_x=(70, 20, 40, 5, 1.0, 20)
    )
    assert [c["holds"] for c in claims_from(bad)] == [False, False, False]
