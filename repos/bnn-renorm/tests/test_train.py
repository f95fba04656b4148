"""Smoke run of the entry point and the benchmark: artefacts, finite metrics, determinism."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from conftest import SHRINK

from bnn_renorm.bench import figures
from bnn_renorm.config import PRESETS
from bnn_renorm.train import evaluate, train_and_evaluate


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["paper", "full"])
def test_larger_presets_run_at_tiny_size(preset, tiny, tmp_path):
    base = PRESETS[preset]
    small = {f.name: getattr(tiny, f.name) for f in dataclasses.fields(tiny) if f.name != "name"}
    cfg = dataclasses.replace(base, **(small | {"device": "cpu"}))
    assert cfg.name == preset and base.n0 == 500 and base.p == 200
    assert (base.sub_relu_p, base.sub_relu_n0, base.sub_relu_widths) == (200, 40, (2, 5, 10, 20))
    metrics = train_and_evaluate(cfg, tmp_path)
    assert all(math.isfinite(v) for v in metrics.values())


def test_paper_preset_names_its_figures_and_keeps_the_presets_sizes(readme_run, tmp_path):
    folder, _, _ = readme_run
    doc = json.loads((folder / "results" / "quick.json").read_text())
    cfg = dataclasses.replace(PRESETS["paper"], **{k: v for k, v in SHRINK.items()})
    figures(cfg, doc["metrics"], tmp_path)
    assert {p.name for p in tmp_path.glob("*.png")} == {
        "paper-variance_ratio.png",
        "paper-sublinear.png",
    }
    paper = PRESETS["paper"]
    assert (paper.n0, paper.p, paper.sub_relu_p, paper.sub_relu_n0) == (500, 200, 200, 40)
    assert paper.sub_relu_widths == (2, 5, 10, 20) and paper.sub_nuts_warmup >= 400


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
    assert len(doc["metrics"]) >= 2 and len(doc["claims"]) == 5
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert all(
        isinstance(c["negative_control"]["passes_the_same_check"], bool) for c in doc["claims"]
    )
    row = doc["performance"][0]
    assert row["unit"] == "effective samples/s" and row["ours_value"] > 0 and row["peer_value"] > 0
    assert doc["tuning"]["grid"] == {}
    assert {p.name for p in (folder / "results" / "figures").glob("*.png")} == {
        "variance_ratio.png",
        "sublinear.png",
    }
