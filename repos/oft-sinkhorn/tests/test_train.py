"""The entry point: artefacts, finite metrics, determinism, DIMACS input, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from oft_sinkhorn import baselines, data
from oft_sinkhorn.config import PRESETS
from oft_sinkhorn.train import (
    evaluate,
    exact_reference,
    flow_metrics,
    generate,
    solve,
    stage_metrics,
    train_and_evaluate,
)


def test_smoke_writes_config_stages_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["n"] == tiny.n
    assert {"gap", "restored_gap", "residual", "capacity_violation", "optimum", "converged"} <= set(
        metrics
    )
    assert all(math.isfinite(v) for v in metrics.values())
    reloaded = evaluate(tiny, tmp_path / "run")  # the saved flow, measured again
    for key in ("optimum", "gap", "restored_gap", "capacity_violation"):
        assert reloaded[key] == metrics[key], key
    for key in ("residual", "node_excess"):  # the solver's own sums vs numpy's, same flow
        assert reloaded[key] == pytest.approx(metrics[key], rel=1e-6, abs=1e-12), key
    stages = json.loads((tmp_path / "run" / "stages.json").read_text())
    assert [s["eps"] / 100 for s in stages] == pytest.approx(tiny.eps)  # netgen costs reach 100
    assert all(s["converged"] for s in stages) and metrics["converged"] == 1.0
    flow = np.load(tmp_path / "run" / "flow.npy")
    assert flow.shape == (data.netgen_mcf(tiny.n, tiny.seed).n_arcs,)


def test_eval_measures_the_saved_flow_and_names_a_bad_one(tiny, tmp_path):
    run = tmp_path / "run"
    metrics = train_and_evaluate(tiny, run)
    flow = np.load(run / "flow.npy")
    np.save(run / "flow.npy", 2 * flow)  # twice the flow: twice the cost, out of balance
    doubled = evaluate(tiny, run)
    assert doubled["gap"] == pytest.approx(2 * metrics["gap"] + 1)
    assert doubled["residual"] > 0.5
    np.save(run / "flow.npy", flow[:-1])
    with pytest.raises(ValueError, match="flow.npy: expected"):
        evaluate(tiny, run)
    (run / "flow.npy").write_bytes(b"not numpy")
    with pytest.raises(ValueError, match="flow.npy: unreadable flow file"):
        evaluate(tiny, run)


def test_same_seed_same_numbers(tiny, tmp_path):
    a, b = (train_and_evaluate(tiny, tmp_path / name) for name in "ab")
    timeless = lambda m: {k: v for k, v in m.items() if "seconds" not in k}
    assert timeless(a) == timeless(b)
    other = train_and_evaluate(dataclasses.replace(tiny, seed=1), tmp_path / "c")
    assert other["optimum"] != a["optimum"]


def test_train_solves_a_dimacs_file(tiny, tmp_path):
    inst = data.netgen_mcf(20, seed=4)
    data.write_dimacs(inst, tmp_path / "g.min")
    metrics = train_and_evaluate(
        dataclasses.replace(tiny, instance=str(tmp_path / "g.min")), tmp_path / "run"
    )
    assert metrics["optimum"] == baselines.ortools_mcf(inst).cost


@pytest.mark.parametrize("preset", ["paper", "full"])
def test_other_presets_run_one_step_at_tiny_size(preset, tmp_path):
    cfg = dataclasses.replace(PRESETS[preset], device="cpu", n=20, max_iter=1)
    with pytest.warns(UserWarning, match="spent max_iter=1"):
        metrics = train_and_evaluate(cfg, tmp_path)
    assert all(math.isfinite(v) for v in metrics.values())
    assert metrics["iterations"] == len(cfg.eps) and metrics["converged"] == 0.0


def test_node_bound_effect_is_zero_without_node_bounds():
    """A netgen-node instance at small N can draw no node bound at all; the optimum then rises by
    exactly nothing, and the key is there for the claims (it was a KeyError at --sizes 10)."""
    from oft_sinkhorn.train import exact_reference

    inst = data.netgen_mcf(10, 0, node_share=0.0)
    assert not np.isfinite(inst.node_capacity).any()
    assert exact_reference(inst)["node_bound_effect"] == 0.0
    bounded = data.netgen_mcf(60, 0, node_share=0.5)
    assert np.isfinite(bounded.node_capacity).any()
    assert exact_reference(bounded)["node_bound_effect"] >= 0.0


def test_gap_is_relative_to_the_optimum_and_flows_are_checked_against_it():
    """Twice the optimal flow costs twice the optimum: gap exactly 1 (not 1/2, as a gap over our
    own cost would read), residual 1; the optimal flow itself: gap 0."""
    inst = data.netgen_mcf(30, seed=4, capacitated=False)
    ref = exact_reference(inst)
    exact = baselines.highs_lp(inst)
    assert ref["optimum"] == pytest.approx(exact.cost) and ref["arcs"] == inst.n_arcs
    assert ref["floor_gap"] > 0  # the cost-blind flow costs more than the optimum
    double = flow_metrics(inst, 2 * exact.flow, ref["optimum"])
    assert double["gap"] == pytest.approx(1.0) and double["residual"] == pytest.approx(1.0)
    same = flow_metrics(inst, exact.flow, ref["optimum"])
    assert abs(same["gap"]) < 1e-9 and abs(same["restored_gap"]) < 1e-9


def test_unsuffixed_metrics_are_the_last_stage(tiny):
    inst = data.netgen_mcf(20, seed=0)
    ref = exact_reference(inst)
    metrics = stage_metrics(inst, solve(inst, tiny), tiny.eps, ref["optimum"])
    last = f"@{tiny.eps[-1]:g}"
    for key in ("gap", "restored_gap", "residual", "node_excess"):
        assert metrics[key] == metrics[key + last], key
    assert metrics["gap"] != metrics[f"gap@{tiny.eps[-2]:g}"]


def test_solve_pins_the_blas_pools_to_the_configured_threads(tiny):
    """numpy's BLAS pool is held to cfg.threads while solving (an oversubscribed OpenBLAS pool
    made every L-BFGS iteration 5x slower on a loaded 2-core machine)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(limits=2):  # whatever the machine has, start from a wider pool
        inst = generate("netgen", 12, 0, tiny.degree, tiny.node_share)
        solve(inst, dataclasses.replace(tiny, threads=1))
        blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
        assert blas, "numpy loaded no BLAS pool that threadpoolctl can see"
        assert all(p["num_threads"] == 1 for p in blas), blas
