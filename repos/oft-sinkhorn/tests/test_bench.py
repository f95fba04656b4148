"""The benchmark writes the results schema, figures, and claims that follow from its metrics."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from oft_sinkhorn import bench, eoft
from oft_sinkhorn import claims as claims_module
from oft_sinkhorn.bench import GRID, run_bench
from oft_sinkhorn.claims import POT_TOL, monotone
from oft_sinkhorn.config import PRESETS
from oft_sinkhorn.results import verdict

CLAIMS = {
    "pot-equality",
    "gap-under-1pct",
    "capacitated-near-optimal",
    "gap-monotone-in-eps",
    "jacobi-converges",
    "speed-uncapacitated",
    "speed-capacitated",
}


def test_bench_writes_schema_claims_and_figures(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    assert doc["mode"] == "quick"
    assert {"OFT-Sinkhorn", "OR-Tools", "networkx", "HiGHS", "POT", "cost-blind floor"} <= set(
        doc["metrics"]
    )
    assert {f"OFT-Sinkhorn ({s})" for s in GRID} <= set(doc["metrics"])
    claims = {c["id"]: c for c in doc["claims"]}
    assert set(claims) == CLAIMS
    assert all(isinstance(c["holds"], bool) and c["paper"] and c["ours"] for c in claims.values())
    pot_diffs = doc["metrics"]["OFT-Sinkhorn"]["bipartite/max_abs_diff"]["values"]
    pot = claims["pot-equality"]
    assert pot["test"][0]["interval"][1] == max(pot_diffs) < POT_TOL
    assert not pot["holds"] and pot["seeds_needed"] == 3  # two seeds never hold a claim
    for c in claims.values():  # the three-way verdict follows from the structured parts
        assert c["test"] and c["verdict"] == verdict(c["test"])
        assert c["holds"] == (c["verdict"] == "holds")
    for cid in ("speed-uncapacitated", "speed-capacitated"):  # CPU: never decided
        assert claims[cid]["verdict"] == "inconclusive"
        assert all(p["interval"] == [None, None] for p in claims[cid]["test"])
    arcs = doc["metrics"]["OFT-Sinkhorn"]["uniform/n20/arcs"]["values"]
    assert all(a >= 20 for a in arcs)
    assert set(doc["tuning"]["chosen"]) == set(GRID) and doc["tuning"]["grid"] == GRID
    for row in doc["performance"]:
        assert {"id", "what", "unit", "higher_is_better", "ours_value"} <= set(row)
        assert np.isfinite(row["ours_value"])
    assert any(p["id"] == "uniform-growth-ortools" for p in doc["performance"])
    for name in ("gap_vs_eps.png", "time_vs_n.png", "solvers.png"):
        assert (Path(tiny.results_dir) / "figures" / name).stat().st_size > 0


def test_paper_preset_at_tiny_size(tmp_path):
    """PRESETS["paper"] with only its sizes shrunk: same claim ids as quick, paper-*.png figures,
    and the timing row (one seed, beyond the claim sizes) in the growth exponents only."""
    cfg = dataclasses.replace(
        PRESETS["paper"],
        sizes=(20, 25),
        seeds=(0, 1),
        eps=(0.3, 0.1, 0.03),
        tune_n=20,
        compare_n=20,
        control_n=20,
        compare_max_iter=20_000,
        timing_sizes=(35,),
        bipartite_size=5,
        quiet=True,
        results_dir=str(tmp_path / "elsewhere"),
    )
    doc = run_bench(cfg)
    assert doc["mode"] == "paper" and (tmp_path / "elsewhere" / "paper.json").exists()
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    for name in ("gap_vs_eps", "time_vs_n", "solvers"):
        assert (tmp_path / "elsewhere" / "figures" / f"paper-{name}.png").exists()
        assert not (tmp_path / "elsewhere" / "figures" / f"{name}.png").exists()
    rows = {p["id"]: p for p in doc["performance"]}
    assert "netgen-n35-networkx" in rows and "netgen-node-n35-highs" not in rows
    assert "N=[20, 25, 35]" in rows["netgen-growth-highs"]["what"]
    assert "35" not in next(c for c in doc["claims"] if c["id"] == "gap-under-1pct")["statement"]


def test_monotone_check_fails_on_a_rising_or_flat_curve():
    eps = (0.3, 0.1, 0.03)
    falling = {"restored_gap@0.3": [0.5], "restored_gap@0.1": [0.1], "restored_gap@0.03": [0.01]}
    rising = falling | {"restored_gap@0.1": [0.6]}
    flat = {k: [0.5] for k in falling}
    assert monotone(falling, eps, 1e-4).all()
    assert not monotone(rising, eps, 1e-4).any() and not monotone(flat, eps, 1e-4).any()


def test_gate_fails_on_an_unconverged_or_infeasible_cell():
    good = {
        "restored_gap": [0.001],
        "residual": [1e-5],
        "capacity_violation": [0.0],
        "converged": [1.0],
    }
    table = {("netgen", 20): good}
    assert claims_module.passes(claims_module.gate(table, ["netgen"], (20,)), True)
    for change in ({"converged": [0.0]}, {"residual": [2e-3]}, {"capacity_violation": [0.01]}):
        bad = {("netgen", 20): good | change}
        assert not claims_module.passes(claims_module.gate(bad, ["netgen"], (20,)), True)


def test_every_run_part_holds_only_when_every_run_passes():
    assert verdict([claims_module.every_run("gap", [0.001, 0.002], 0.01, "<")]) == "inconclusive"
    assert verdict([claims_module.every_run("gap", [0.001, 0.002, 0.003], 0.01, "<")]) == "holds"
    one_bad = claims_module.every_run("gap", [0.001, 0.02, 0.003], 0.01, "<")
    assert verdict([one_bad]) == "inconclusive" and one_bad["estimate"] == 0.02
    assert (
        verdict([claims_module.every_run("gap", [0.02, 0.03, 0.05], 0.01, "<")]) == "contradicted"
    )


def test_gate_parts_contradict_a_cell_whose_floor_passes_or_gap_fails():
    good = {
        "restored_gap": [0.001, 0.002, 0.003],
        "residual": [1e-5] * 3,
        "capacity_violation": [0.0] * 3,
        "converged": [1.0] * 3,
        "floor_gap": [0.3, 0.4, 0.2],
    }
    parts = lambda cell: claims_module.gate_parts({("netgen", 20): cell}, ["netgen"], (20,), True)
    assert verdict(parts(good)) == "holds"
    assert verdict(parts(good | {"floor_gap": [0.001, 0.002, 0.004]})) == "contradicted"
    assert verdict(parts(good | {"restored_gap": [0.02, 0.03, 0.05]})) == "contradicted"
    assert verdict(parts(good | {"converged": [0.0, 0.0, 0.0]})) == "contradicted"
    assert verdict(parts(good | {"capacity_violation": [0.01, 0.02, 0.05]})) == "contradicted"


def test_tuning_never_sees_a_benchmark_seed(tiny, monkeypatch):
    """Solver settings are chosen on the validation seed only (no leak of the test instances)."""
    seen = []
    real = bench.generate

    def spy(family, n, seed, *args):
        seen.append(seed)
        return real(family, n, seed, *args)

    def fake_solve(inst, cfg, budget=None):  # converge at once: only the instances matter here
        return [eoft.Stage(e, 1, 0.0, 0.0, 0.0, 0.0, np.zeros(inst.n_arcs), True) for e in cfg.eps]

    monkeypatch.setattr(bench, "generate", spy)
    monkeypatch.setattr(bench, "solve", fake_solve)
    tuning = bench.tune(tiny)
    assert seen and set(seen) == {bench.VALIDATION_SEED}
    assert not set(seen) & set(tiny.seeds) and set(tuning["chosen"]) == set(GRID)
