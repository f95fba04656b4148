"""OFT-Sinkhorn against closed forms, slow references, POT and exact solvers."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import torch

from oft_sinkhorn import baselines, data, eoft, solvers


def solve(inst, eps, **kwargs):
    return solvers.oft_sinkhorn(inst, eps, **kwargs)


def test_balance_root_solves_the_node_equation():
    """x = exp(root) satisfies a x - b / x = s for both signs of s, s = 0, and wide ranges of a, b."""
    gen = torch.Generator().manual_seed(0)
    log_a, log_b = (
        20 * torch.randn(200, generator=gen, dtype=torch.float64),
        20 * torch.randn(200, generator=gen, dtype=torch.float64),
    )
    s = torch.randn(200, generator=gen, dtype=torch.float64) * torch.exp(
        5 * torch.randn(200, generator=gen)
    )
    s[:20] = 0
    log_x = eoft.balance_root(log_a, log_b, s)
    out, inn = torch.exp(log_a + log_x), torch.exp(log_b - log_x)
    assert torch.all(torch.abs(out - inn - s) <= 1e-9 * (out + inn))  # node by node
    assert torch.all(torch.isfinite(log_x))
    one = torch.ones(2, dtype=torch.float64)  # x - 1/x = +-3: x = (+-3 + sqrt(13)) / 2
    got = eoft.balance_root(0 * one, 0 * one, torch.tensor([3.0, -3.0], dtype=torch.float64))
    want = torch.tensor([(3 + 13**0.5) / 2, (-3 + 13**0.5) / 2], dtype=torch.float64)
    torch.testing.assert_close(got.exp(), want, rtol=1e-12, atol=0)


def test_segment_logsumexp_matches_a_python_loop():
    values = torch.tensor([0.5, -3.0, 700.0, 699.0, 2.0], dtype=torch.float64)
    index = torch.tensor([0, 0, 2, 2, 3])
    got = eoft.segment_logsumexp(values, index, 5)
    for i in range(5):
        members = [float(v) for v, j in zip(values, index) if j == i]
        want = np.logaddexp.reduce(members) if members else -np.inf
        assert float(got[i]) == pytest.approx(want, rel=1e-12)


def test_segment_logsumexp_matches_torch_geometric():
    """Against PyG's segment_logsumexp (which needs a sorted index and writes 0, not -inf, for an
    empty segment), on an unsorted index with large and tiny values."""
    pyg = pytest.importorskip("torch_geometric.utils")
    gen = torch.Generator().manual_seed(1)
    index = torch.randint(0, 40, (500,), generator=gen)
    values = 300 * torch.randn(500, generator=gen, dtype=torch.float64)
    ours = eoft.segment_logsumexp(values, index, 45)
    order = torch.argsort(index, stable=True)
    ptr = torch.zeros(46, dtype=torch.long)
    ptr[1:] = torch.cumsum(torch.bincount(index, minlength=45), 0)
    theirs = pyg.segment_logsumexp(values[order], ptr, dim=0)
    empty = torch.bincount(index, minlength=45) == 0
    assert empty.any() and torch.all(torch.isneginf(ours[empty]))
    torch.testing.assert_close(ours[~empty], theirs[~empty], rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("kernel", ["sparse", "dense"])
def test_bipartite_plan_equals_pot_sinkhorn(kernel):
    inst, a, b, cost = data.bipartite(6, 4, seed=0)
    (stage,) = solve(inst, (0.05,), tol=1e-13, max_iter=50_000, kernel=kernel)
    np.testing.assert_allclose(
        stage.flow.reshape(cost.shape), baselines.pot_sinkhorn(a, b, cost, 0.05), atol=1e-9
    )


def test_chain_carries_unit_flow_as_eps_falls():
    """0 -> 1 -> 2 costs 2, the direct arc 0 -> 2 costs 3: the flow moves onto the chain."""
    inst = data.make_instance(3, [0, 1, 0], [1, 2, 2], [1.0, 1.0, 3.0], [1.0, 0.0, -1.0])
    stages = solve(inst, (1.0, 0.3, 0.1, 0.03), tol=1e-10, max_iter=20_000)
    direct = [s.flow[2] for s in stages]
    assert all(later < earlier for earlier, later in itertools.pairwise(direct))
    np.testing.assert_allclose(stages[-1].flow, [1, 1, 0], atol=1e-9)


def test_two_equal_cost_paths_split_evenly():
    inst = data.make_instance(
        4, [0, 1, 0, 2], [1, 3, 2, 3], [1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, -1.0]
    )
    (stage,) = solve(inst, (0.01,), tol=1e-12, max_iter=20_000)
    np.testing.assert_allclose(stage.flow, 0.5, atol=1e-9)


def test_isolated_and_dead_end_nodes_stay_finite():
    """Node 3 has no arcs and node 4 only an incoming one: no NaN, balance still met."""
    inst = data.make_instance(5, [0, 1, 1], [1, 2, 4], [1.0, 1.0, 1.0], [1.0, 0.0, -1.0, 0.0, 0.0])
    for kernel in ("sparse", "dense"):
        (stage,) = solve(inst, (0.05,), tol=1e-9, max_iter=20_000, kernel=kernel)
        assert np.all(np.isfinite(stage.flow)) and stage.residual < 1e-9
        assert stage.flow[2] < 1e-9  # nothing flows into the dead end


def test_integer_instance_agrees_with_exact_solvers():
    inst = data.netgen_mcf(40, seed=3, capacitated=False)
    exact = {name: solve_exact(inst).cost for name, solve_exact in baselines.EXACT.items()}
    assert len(set(exact.values())) == 1, exact
    stages = solve(inst, tuple(100 * e for e in (0.3, 0.1, 0.03, 0.01)), tol=1e-5)
    gaps = [(s.cost - exact["ortools"]) / exact["ortools"] for s in stages]
    assert abs(gaps[-1]) < 0.01 and stages[-1].residual < 1e-4
    assert all(
        later <= earlier for earlier, later in itertools.pairwise(gaps)
    )  # gap falls with eps


def test_kernels_agree_and_arc_capacities_hold():
    inst = data.netgen_mcf(30, seed=1, capacitated=True)
    sparse, dense = (solve(inst, (30.0, 10.0, 3.0, 1.0), kernel=k)[-1] for k in ("sparse", "dense"))
    np.testing.assert_allclose(sparse.flow, dense.flow, rtol=1e-8, atol=1e-8)
    assert eoft.capacity_violation(inst, sparse.flow) < 1e-12
    assert eoft.balance_residual(inst, sparse.flow) == pytest.approx(sparse.residual, rel=1e-6)
    optimum = baselines.highs_lp(inst).cost
    assert abs(sparse.cost - optimum) / optimum < 0.02


def test_node_capacity_truncation_reaches_the_lp_optimum():
    """Cheap path via node 1 (throughput <= 1), dear path via node 2: optimum 1*2 + 2*4 = 10."""
    inst = data.make_instance(
        4,
        [0, 1, 0, 2],
        [1, 3, 2, 3],
        [1.0, 1.0, 2.0, 2.0],
        [3.0, 0.0, 0.0, -3.0],
        node_capacity=[np.inf, 1, np.inf, np.inf],
    )
    assert baselines.highs_lp(inst).cost == pytest.approx(10) == baselines.ortools_mcf(inst).cost
    (stage,) = solve(inst, (0.02,), tol=1e-10, max_iter=50_000)
    assert stage.cost == pytest.approx(10, rel=1e-3)
    assert eoft.capacity_violation(inst, stage.flow) < 1e-6 and stage.residual < 1e-10


def test_node_capacity_truncation_at_a_node_with_its_own_supply():
    """Node 1 supplies 1 unit and passes on at most 1 unit of inflow (throughput = inflow), so its
    outflow is Q + s = 2: optimum 1*1 + 2*1 + 2*2 + 2*2 = 11."""
    inst = data.make_instance(
        4,
        [0, 1, 0, 2],
        [1, 3, 2, 3],
        [1.0, 1.0, 2.0, 2.0],
        [3.0, 1.0, 0.0, -4.0],
        node_capacity=[np.inf, 1, np.inf, np.inf],
    )
    assert baselines.highs_lp(inst).cost == pytest.approx(11) == baselines.ortools_mcf(inst).cost
    (stage,) = solve(inst, (0.02,), tol=1e-10, max_iter=50_000)
    assert stage.cost == pytest.approx(11, rel=1e-3)
    assert eoft.capacity_violation(inst, stage.flow) < 1e-6 and stage.residual < 1e-10


def test_solver_refuses_bad_arguments():
    inst = data.uniform_mcf(10, seed=0)
    with pytest.raises(ValueError, match="eps_schedule must hold positive values"):
        solve(inst, (1.0, 0.0))
    with pytest.raises(ValueError, match="kernel must be one of"):
        solve(inst, (1.0,), kernel="blocked")
    with pytest.raises(ValueError, match="solver must be one of"):
        solve(inst, (1.0,), solver="newton")
    with pytest.raises(ValueError, match="damping must lie in"):
        solve(inst, (1.0,), damping=1.0)


NODE_CAPPED = data.netgen_mcf(60, seed=2, node_share=0.5)
EPS = tuple(100 * e for e in (0.3, 0.1, 0.03, 0.01, 0.003))


@pytest.mark.parametrize("solver", solvers.SOLVERS)
def test_every_solver_reaches_the_same_node_capacitated_fixed_point(solver):
    """Beyond toy size (60 nodes, arc and node bounds): the three solvers agree with each other and
    end within tolerance, inside every bound, and close to the exact optimum."""
    tol = 1e-6 if solver == "lbfgs" else 1e-7  # L-BFGS stalls near 1e-7 (float64 dual value)
    reference = solve(NODE_CAPPED, EPS[:3], solver="anderson", tol=1e-10, max_iter=50_000)[-1]
    stage = solve(NODE_CAPPED, EPS[:3], solver=solver, tol=tol, max_iter=200_000)[-1]
    assert stage.converged and stage.residual + stage.node_excess < tol
    np.testing.assert_allclose(stage.flow, reference.flow, rtol=0, atol=1e-2)  # flows up to ~3e3
    assert eoft.capacity_violation(NODE_CAPPED, stage.flow) < 1e-5  # node excess is ~tol


def test_node_bounds_bind_and_the_restored_gap_is_small():
    exact = baselines.highs_lp(NODE_CAPPED)
    free = dataclasses.replace(NODE_CAPPED, node_capacity=np.full(NODE_CAPPED.n, np.inf))
    assert exact.cost > baselines.highs_lp(free).cost * 1.001  # the node bounds matter here
    stage = solve(NODE_CAPPED, EPS, solver="anderson", max_iter=50_000)[-1]
    restored = baselines.restore_feasibility(NODE_CAPPED, stage.flow)
    assert stage.converged and eoft.capacity_violation(NODE_CAPPED, stage.flow) < 1e-3
    assert 0 <= (restored.cost - exact.cost) / exact.cost < 0.01


def test_dual_gradient_matches_autograd():
    """solvers.dual's analytic gradient equals the autograd gradient of its value."""
    prob = eoft.Problem(NODE_CAPPED, "sparse", "cpu", torch.float64)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(prob.n + int(prob.capped.sum()), generator=gen, dtype=torch.float64)
    x[prob.n :] = x[prob.n :].abs()
    x.requires_grad_(True)
    value, grad, _ = solvers.dual(prob, x, eps=5.0)
    (auto,) = torch.autograd.grad(value, x)
    torch.testing.assert_close(grad, auto, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("solver", solvers.SOLVERS)
def test_budget_exhaustion_is_flagged_and_warned(solver):
    """max_iter is a hard cap for every solver (L-BFGS stops inside a line search too)."""
    inst = data.netgen_mcf(40, seed=0)
    with pytest.warns(solvers.ConvergenceWarning, match="max_iter=5"):
        stages = solve(inst, (10.0, 1.0), max_iter=5, solver=solver)
    assert not any(s.converged for s in stages) and all(s.iterations == 5 for s in stages)
    (done,) = solve(inst, (10.0,), max_iter=50_000)
    assert done.converged and done.residual < 1e-4


def test_restoration_makes_any_flow_feasible_and_never_undercuts_the_optimum():
    inst = data.netgen_mcf(40, seed=1, node_share=0.5)
    exact = baselines.highs_lp(inst)
    rng = np.random.default_rng(0)
    for flow in (exact.flow, exact.flow * rng.uniform(0.5, 1.5, inst.n_arcs), 0 * exact.flow):
        fixed = baselines.restore_feasibility(inst, flow)
        assert eoft.balance_residual(inst, fixed.flow) < 1e-9
        assert eoft.capacity_violation(inst, fixed.flow) < 1e-9
        assert fixed.cost >= exact.cost * (1 - 1e-9)
    assert baselines.restore_feasibility(inst, exact.flow).cost == pytest.approx(exact.cost)
    floor = baselines.cost_blind_flow(inst)
    assert eoft.balance_residual(inst, floor.flow) < 1e-9 and floor.cost > exact.cost


def test_each_eps_stage_warm_starts_from_the_last():
    """The eps schedule hands its potentials on: the last stage needs far fewer iterations than
    the same eps started cold (490 against 1,030 here)."""
    inst = data.netgen_mcf(40, seed=0)
    warm = solve(inst, (30.0, 10.0, 3.0), max_iter=50_000)[-1]
    (cold,) = solve(inst, (3.0,), max_iter=50_000)
    assert warm.converged and cold.converged
    assert warm.iterations < 0.75 * cold.iterations


def test_residual_is_relative_to_the_total_supply():
    """The empty flow leaves all of s unbalanced: residual exactly 1; twice the optimum: 1 too."""
    inst = data.netgen_mcf(30, seed=4, capacitated=False)
    assert eoft.balance_residual(inst, np.zeros(inst.n_arcs)) == pytest.approx(1.0)
    exact = baselines.highs_lp(inst)
    assert eoft.balance_residual(inst, 2 * exact.flow) == pytest.approx(1.0)
    assert eoft.balance_residual(inst, exact.flow) < 1e-9
