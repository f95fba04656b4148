"""The benchmark: schema, paper-preset file names, claims decided by thresholds on the pooled
records (and failing on the negative controls), the statistics behind them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from sde_causal import sde, stats
from sde_causal.bench import make_claims
from sde_causal.config import PRESETS
from sde_causal.train import CONTROLS, METHODS, load_records, run_job


def test_paper_preset_writes_schema_performance_figures(paper_run):
    cfg, doc = paper_run
    on_disk = json.loads((Path(cfg.results_dir) / "paper.json").read_text())
    assert on_disk == json.loads(json.dumps(doc))
    assert doc["mode"] == "paper" and doc["paper"] == "sde-causal" and doc["tuning"]
    assert set(METHODS + CONTROLS) <= set(doc["metrics"])
    assert all(isinstance(c["holds"], bool) and c["paper"] and c["ours"] for c in doc["claims"])
    ids = [c["id"] for c in doc["claims"]]
    assert ids[:3] == [
        "type1-calibrated",
        "power-diffusion-size-adjusted",
        "power-drift-size-adjusted",
    ]
    assert ids[3:] == [f"shd-{f}" for f in sde.FAMILIES]
    assert all("negative_control" in c for c in doc["claims"])
    perf = doc["performance"]
    assert [p["id"] for p in perf] == ["gram-8x8-vs-numpy", "gram-8x8-vs-pysiglib-default"]
    assert all(p["unit"] == "s" and p["higher_is_better"] is False for p in perf)
    assert all(p["ours_value"] > 0 and p["peer_value"] > 0 for p in perf)
    figures = sorted(p.name for p in (Path(cfg.results_dir) / "figures").glob("*.png"))
    assert figures == [f"paper-{n}.png" for n in ("ci_tests", "power_vs_n", "shd", "tuning")]
    grid = doc["tuning"]["methods"]["SigKer-CI"]
    assert grid["grid"] == list(cfg.ridge_grid) and grid["chosen"] in grid["grid"]
    # the ridge diagnostic: every grid value at every n <= 100, rates in [0, 1]
    sens = doc["pooled"]["ridge_sensitivity"]
    assert set(sens) == {str(n) for n in cfg.n_grid if n <= 100}
    for rows in sens.values():
        assert set(rows) == {str(v) for v in cfg.ridge_grid}
        assert all(0 <= x <= 1 for row in rows.values() for x in row.values())


def test_records_are_deterministic_per_job(paper_run):
    """Re-running single jobs of seed 0 reproduces their stored p-values exactly."""
    from sde_causal import tuning
    from sde_causal.train import jobs

    cfg, doc = paper_run
    run_cfg = tuning.apply(dataclasses.replace(cfg, seed=0), doc["tuning"])
    records = load_records(Path(cfg.out) / "seed0")
    todo = jobs(run_cfg)
    for k in (0, len(todo) // 3, len(todo) - 1):
        assert json.loads(json.dumps(run_job(run_cfg, k, todo[k]))) == records[k]


def _records(sig_alt: float, base_alt: float, sig_null: tuple, rng, sig_shd: int = 1) -> list[dict]:
    """Synthetic job records: SigKer-CI's p-values ~ U(0, scale) on alternatives and
    U(*sig_null) on nulls; baselines U(0, 1) on nulls and U(0, base_alt) on alternatives."""
    out = []
    for kind, count in (("type1", 60), ("power_drift", 40), ("power_diffusion", 40)):
        for _ in range(count):
            p = {m: float(rng.uniform(0, 1)) for m in METHODS + CONTROLS}
            if kind == "type1":
                p["SigKer-CI"] = float(rng.uniform(*sig_null))
                p["SigKer-CI no-cond"] = float(rng.uniform(0, 0.05))  # anti-conservative
            else:
                p["SigKer-CI"] = float(rng.uniform(0, sig_alt))
                for m in METHODS[1:]:
                    p[m] = float(rng.uniform(0, base_alt))
            out.append({"kind": kind, "n": 100, "family": "linear", "case": "x", "p": p})
    for family in sde.FAMILIES:
        for g in range(8):
            shd = {"SigKer-CI": sig_shd, "Granger": 3, "PCMCI": 4, "oracle": 0, "empty": 3}
            out.append({"kind": "graph", "family": family, "shd": shd, "f1": {}})
    return out


def test_claims_follow_the_thresholds_and_controls_fail():
    from sde_causal.results import verdict

    cfg = dataclasses.replace(PRESETS["quick"], n_grid=(100,))
    rng = np.random.default_rng(0)
    good = {c["id"]: c for c in make_claims(_records(0.01, 1.0, (0.06, 1.0), rng), cfg)}
    assert all(c["verdict"] == "holds" and c["holds"] for c in good.values())
    assert all(c["verdict"] == verdict(c["test"]) for c in good.values())
    assert all(c["negative_control"]["verdict"] != "holds" for c in good.values())
    assert not any(c["negative_control"]["holds"] for c in good.values())
    # a type-I error near alpha on 60 nulls: the Wilson interval straddles 0.10 -> inconclusive
    near = make_claims(_records(0.01, 1.0, (0.0, 1.0), np.random.default_rng(0)), cfg)[0]
    assert near["verdict"] == "inconclusive" and near["seeds_needed"] > 60
    # SigKer-CI anti-conservative on the nulls, baselines as strong as it on alternatives,
    # SigKer-CI's SHD worse than Granger's on every graph
    rng = np.random.default_rng(1)
    bad = {c["id"]: c for c in make_claims(_records(0.01, 0.01, (0.0, 0.1), rng, 5), cfg)}
    assert bad["type1-calibrated"]["verdict"] == "contradicted"
    assert not bad["power-diffusion-size-adjusted"]["holds"]
    assert all(bad[f"shd-{f}"]["verdict"] == "contradicted" for f in sde.FAMILIES)
    parts = bad["shd-linear"]["test"]
    assert parts[0]["direction"] == "<" and parts[0]["threshold"] == 0 and parts[0]["n"] == 8


def test_critical_value_and_size_adjusted_power():
    null = np.array([0.01, 0.02, 0.03, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99] * 2)
    c, gamma = stats.critical_value(null, 0.1)  # 2 of 20 null p-values below c
    assert (c, gamma) == (0.02, 0.0) and (null < c).mean() <= 0.1
    # an anti-conservative test cannot buy power: all nulls tiny -> cut below every alternative
    assert stats.size_adjusted_power(np.full(20, 1e-4), np.full(10, 1e-3), 0.05) == 0.0
    # a conservative test is not penalised: no null below 0.3 -> alternatives at 0.2 count
    assert stats.size_adjusted_power(np.linspace(0.3, 1, 20), np.full(10, 0.2), 0.05) == 1.0
    assert stats.critical_value(np.array([0.5]), 1.0) == (float("inf"), 0.0)
    # permutation floor: 2 of 20 nulls and every alternative tied at p = 1/201; a size-0.05
    # test rejects a tied data set with probability 1/2, so size exactly 0.05 on the nulls
    floor = 1 / 201
    null = np.r_[np.full(2, floor), np.linspace(0.1, 1, 18)]
    assert stats.critical_value(null, 0.05) == (floor, 0.5)
    assert stats.size_adjusted_power(null, null, 0.05) == pytest.approx(0.05)
    assert stats.size_adjusted_power(null, np.full(8, floor), 0.05) == 0.5


def test_wilson_and_paired_intervals_cover_their_estimates():
    lo, hi = stats.wilson(3, 60)
    assert lo < 0.05 < hi and 0 <= lo and hi <= 1
    d = stats.paired_mean_difference(np.array([1, 2, 3, 1.0]), np.array([2, 2, 4, 3.0]))
    assert d["diff"] == pytest.approx(-1.0) and d["lo"] <= -1.0 <= d["hi"] <= 0
    same = stats.paired_mean_difference(np.ones(5), np.ones(5))
    assert same == {"diff": 0.0, "lo": 0.0, "hi": 0.0}
