"""Smoke run of the entry point (artefacts, finite metrics, records), presets, the tuning rule."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from sde_causal import sde, tuning
from sde_causal.config import PRESETS, validate
from sde_causal.results import atomic_write_json
from sde_causal.train import METHODS, evaluate, load_records, train_and_evaluate


def test_smoke_run_is_complete_and_finite(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, tune_reps=0)
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["n_paths"] == cfg.n_paths
    assert evaluate(cfg, tmp_path / "run") == metrics  # recomputed from the saved records
    n = max(cfg.n_grid)
    for m in METHODS:
        for key in ("type1", "power_drift", "power_diffusion", f"type1_n{n}"):
            assert 0.0 <= metrics[f"{m}/{key}"] <= 1.0
        for key in ("type1_irregular", "power_drift_irregular", "power_diffusion_irregular"):
            assert 0.0 <= metrics[f"{m}/{key}"] <= 1.0
        assert 0.0 <= metrics[f"{m}/power_diffusion_sa"] <= 1.0
    assert all(math.isfinite(v) for v in metrics.values())
    for m in ("SigKer-CI", "PCMCI", "Granger", "oracle", "empty"):
        assert {f"{m}/shd", f"{m}/shd_quadratic", f"{m}/shd_diffusion"} <= set(metrics)
    assert metrics["oracle/shd"] == 0.0  # the CI-oracle row recovers every graph
    records = load_records(tmp_path / "run")
    kinds = {r["kind"] for r in records}
    assert kinds == {
        "type1",
        "power_drift",
        "power_diffusion",
        "graph",
        "type1_irregular",
        "power_drift_irregular",
        "power_diffusion_irregular",
        "graph_hidden",
    }
    assert {r["family"] for r in records if r["kind"] == "graph"} == set(sde.FAMILIES)
    # eval reads the records, not metrics.json: reject every null and SigKer-CI's type-I is 1
    for r in records:
        if r["kind"] == "type1":
            r["p"]["SigKer-CI"] = 0.0
    atomic_write_json(tmp_path / "run" / "records.json", records)
    again = evaluate(cfg, tmp_path / "run")
    assert again["SigKer-CI/type1"] == 1.0 and again["KCI-flat/type1"] == metrics["KCI-flat/type1"]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_validate_and_paper_grows_n(name):
    assert validate(PRESETS[name]) is PRESETS[name]
    paper = PRESETS["paper"]
    assert paper.n_grid == (100, 200, 400) and paper.n_obs > PRESETS["quick"].n_obs


def test_tuning_rule_prefers_the_calibrated_value_closest_to_uniform():
    rng = np.random.default_rng(0)
    conservative = rng.uniform(0.5, 1.0, 200)
    exact = rng.uniform(0.0, 1.0, 200)
    anti = rng.uniform(0.0, 0.3, 200)
    pv = np.column_stack([conservative, exact, anti])
    rec = tuning.choose([0.01, 0.1, 1.0], pv, 0.05)
    assert rec["chosen"] == 0.1 and rec["type1"][2] > tuning.TYPE1_MAX
    # nothing calibrated: the lowest type-I error wins
    rec = tuning.choose([1, 2], np.column_stack([anti / 2, anti]), 0.05)
    assert rec["chosen"] == 2 and rec["type1"][1] < rec["type1"][0]


def test_untuned_record_keeps_config_values_and_apply_sets_fields(tiny):
    cfg = dataclasses.replace(tiny, tune_reps=0, ridge=0.07, lags=3)
    rec = tuning.tune(cfg)
    assert rec["methods"]["SigKer-CI"]["chosen"] == 0.07
    assert tuning.apply(cfg, rec) == cfg
    rec["methods"]["Granger"]["chosen"] = 5
    assert tuning.apply(cfg, rec).lags == 5


def test_graph_vars_sets_the_size_of_the_random_graphs(tiny):
    """Issue 65: the paper's sizes (d up to 10) are one flag away; the default stream is kept."""
    from sde_causal.train import jobs

    big = dataclasses.replace(tiny, graph_vars=(10, 10), graphs_per_family=2)
    sizes = {len(case) for kind, _, case, _ in jobs(big) if kind == "graph"}
    assert sizes == {10}
    hidden = {len(case) for kind, _, case, _ in jobs(big) if kind == "graph_hidden"}
    assert hidden == {10 + big.n_hidden}
    default = {len(case) for kind, _, case, _ in jobs(tiny) if kind == "graph"}
    assert default <= {4, 5}
    with pytest.raises(ValueError, match="graph_vars must be two sizes lo <= hi"):
        validate(dataclasses.replace(tiny, graph_vars=(6, 4)))
