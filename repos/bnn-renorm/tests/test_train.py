"""Smoke run of the entry point and the benchmark: artefacts, finite metrics, determinism."""

from __future__ import annotations

import dataclasses
import json
import math

from conftest import SHRINK

from bnn_renorm.config import PRESETS
from bnn_renorm.train import evaluate, train_and_evaluate


def test_full_preset_runs_at_tiny_size(tiny, tmp_path):
    full = PRESETS["full"]
    small = {f.name: getattr(tiny, f.name) for f in dataclasses.fields(tiny) if f.name != "name"}
    cfg = dataclasses.replace(full, **(small | {"device": "cpu"}))
    assert cfg.name == "full" and full.n0 == 500 and full.p == 200
    metrics = train_and_evaluate(cfg, tmp_path)
    assert all(math.isfinite(v) for v in metrics.values())


def test_bench_schema_figures_and_determinism(readme_run):
    """The README run's bench output: schema, claims, figures; seed 0 reproduces `train`."""
    folder, _, _ = readme_run
    bench_run, train_run = folder / "runs" / "quick" / "seed0", folder / "runs" / "demo"
    assert json.loads((bench_run / "config.json").read_text())["p"] == SHRINK["p"]
    metrics = evaluate(bench_run)
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    assert evaluate(train_run) == metrics  # same seed and sizes in two runs, same numbers
    doc = json.loads((folder / "results" / "quick.json").read_text())
    for key in ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics"):
        assert key in doc
    assert len(doc["metrics"]) >= 2 and len(doc["claims"]) == 4
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert doc["performance"][0]["ours_ess_per_s"] > 0
    assert {p.name for p in (folder / "results" / "figures").glob("*.png")} == {
        "variance_ratio.png",
        "sublinear.png",
    }
