"""Exact min-cost-flow solvers (OR-Tools, networkx, HiGHS) and POT's Sinkhorn for bipartite OT.

Each exact solver takes an Instance and returns an ExactSolution with the optimal cost, the flow
per arc (in the instance's arc order) and its wall time. OR-Tools and networkx are integer solvers:
they refuse non-integer data. Node capacities reach them through `data.split_nodes`.
"""

from __future__ import annotations

import dataclasses
import time

import networkx as nx
import numpy as np
import ot
import scipy.optimize
import scipy.sparse
from ortools.graph.python import min_cost_flow

from .data import Instance, split_nodes


@dataclasses.dataclass(frozen=True)
class ExactSolution:
    cost: float
    flow: np.ndarray
    seconds: float


def _integer_data(inst: Instance) -> Instance:
    flat = split_nodes(inst)
    finite_cap = flat.capacity[np.isfinite(flat.capacity)]
    for name, arr in [("cost", flat.cost), ("supply", flat.supply), ("capacity", finite_cap)]:
        if np.any(arr != np.round(arr)):
            raise ValueError(
                f"integer solvers need integer {name}s; use highs for real-valued data"
            )
    return flat


def ortools_mcf(inst: Instance) -> ExactSolution:
    """OR-Tools SimpleMinCostFlow (cost scaling push-relabel); uncapacitated = total supply."""
    flat = _integer_data(inst)
    start = time.perf_counter()
    smcf = min_cost_flow.SimpleMinCostFlow()
    cap = np.where(np.isinf(flat.capacity), flat.total_supply, flat.capacity).astype(np.int64)
    arcs = smcf.add_arcs_with_capacity_and_unit_cost(
        flat.tail, flat.head, cap, flat.cost.astype(np.int64)
    )
    smcf.set_nodes_supplies(np.arange(flat.n), flat.supply.astype(np.int64))
    status = smcf.solve()
    if status != smcf.OPTIMAL:
        raise ValueError(f"OR-Tools min cost flow ended with status {status}")
    flow = smcf.flows(arcs)[: inst.n_arcs].astype(float)
    return ExactSolution(float(smcf.optimal_cost()), flow, time.perf_counter() - start)


def networkx_mcf(inst: Instance) -> ExactSolution:
    """networkx network_simplex on a MultiDiGraph (networkx's demand is minus our supply)."""
    flat = _integer_data(inst)
    start = time.perf_counter()
    graph = nx.MultiDiGraph()
    graph.add_nodes_from((i, {"demand": -int(s)}) for i, s in enumerate(flat.supply))
    for e, (t, h, c, u) in enumerate(
        zip(flat.tail.tolist(), flat.head.tolist(), flat.cost, flat.capacity)
    ):
        attrs = {"weight": int(c)} if np.isinf(u) else {"weight": int(c), "capacity": int(u)}
        graph.add_edge(t, h, key=e, **attrs)
    cost, flow_dict = nx.network_simplex(graph)
    flow = np.array(
        [
            flow_dict[t][h][e]
            for e, (t, h) in enumerate(zip(flat.tail[: inst.n_arcs].tolist(), flat.head.tolist()))
        ]
    )
    return ExactSolution(float(cost), flow.astype(float), time.perf_counter() - start)


def _incidence(inst: Instance) -> tuple[scipy.sparse.csr_array, scipy.sparse.csr_array]:
    """Node-arc incidence (+1 at the tail, -1 at the head) and the inflow rows of capped nodes."""
    arcs, ones = np.arange(inst.n_arcs), np.ones(inst.n_arcs)
    incidence = scipy.sparse.csr_array(
        (
            np.concatenate([ones, -ones]),
            (np.concatenate([inst.tail, inst.head]), np.concatenate([arcs, arcs])),
        ),
        shape=(inst.n, inst.n_arcs),
    )
    capped = np.flatnonzero(np.isfinite(inst.node_capacity))
    inflow = scipy.sparse.csr_array((ones, (inst.head, arcs)), shape=(inst.n, inst.n_arcs))
    return incidence, inflow[capped]


def _linprog(cost, a_eq, b_eq, a_ub, b_ub, bounds) -> np.ndarray:
    res = scipy.optimize.linprog(
        cost,
        A_ub=a_ub if b_ub.size else None,
        b_ub=b_ub if b_ub.size else None,
        A_eq=a_eq,
        b_eq=b_eq,
        bounds=bounds,
        method="highs",
    )
    if res.status != 0:
        raise ValueError(f"HiGHS did not find an optimum: {res.message}")
    return res.x


def highs_lp(inst: Instance, cost: np.ndarray | None = None) -> ExactSolution:
    """The OFT linear program (Eq. 1, with capacities) by scipy's HiGHS; works on real data.
    `cost` replaces the arc costs (the solution's cost is still measured with the true ones)."""
    start = time.perf_counter()
    incidence, inflow = _incidence(inst)
    capped = np.isfinite(inst.node_capacity)
    x = _linprog(
        inst.cost if cost is None else cost,
        incidence,
        inst.supply,
        inflow,
        inst.node_capacity[capped],
        np.stack([np.zeros(inst.n_arcs), inst.capacity], 1),
    )
    return ExactSolution(float(x @ inst.cost), x, time.perf_counter() - start)


def cost_blind_flow(inst: Instance) -> ExactSolution:
    """The floor: a feasible flow that ignores the costs (fewest arc-units, i.e. unit costs)."""
    return highs_lp(inst, cost=np.ones(inst.n_arcs))


def restore_feasibility(inst: Instance, flow: np.ndarray) -> ExactSolution:
    """The cheapest repair of an approximate flow into a feasible one, by an exact LP.

    The flow is clipped to [0, min(c, total supply)] (an unconverged plan can hold 1e40 on an
    arc, which no LP tolerance survives, and no arc needs more than the total supply); then increments up (<= c - f) and down (<= f) on every arc
    route the leftover imbalance s - (P1 - P^T 1) through the residual network, within the node
    bounds, minimising sum_e |D_e| (up_e + down_e): each unit moved is charged, so the repair
    fixes infeasibility and is not a re-optimisation. The repaired flow is feasible, so its cost
    is >= the optimum: a gap measured on it cannot undercut the optimum by infeasibility.
    """
    start = time.perf_counter()
    flow = np.clip(flow, 0, np.minimum(inst.capacity, inst.total_supply))
    incidence, inflow = _incidence(inst)
    capped = np.isfinite(inst.node_capacity)
    weight = np.abs(inst.cost)
    x = _linprog(
        np.concatenate([weight, weight]),
        scipy.sparse.hstack([incidence, -incidence]),
        inst.supply - incidence @ flow,
        scipy.sparse.hstack([inflow, -inflow]),
        inst.node_capacity[capped] - inflow @ flow,
        np.concatenate(
            [
                np.stack([np.zeros_like(flow), inst.capacity - flow], 1),
                np.stack([0 * flow, flow], 1),
            ]
        ),
    )
    fixed = np.clip(flow + x[: inst.n_arcs] - x[inst.n_arcs :], 0, inst.capacity)
    return ExactSolution(float(fixed @ inst.cost), fixed, time.perf_counter() - start)


EXACT = {"ortools": ortools_mcf, "networkx": networkx_mcf, "highs": highs_lp}


def pot_sinkhorn(
    a: np.ndarray, b: np.ndarray, cost: np.ndarray, eps: float, tol: float = 1e-12
) -> np.ndarray:
    """POT's log-domain Sinkhorn plan for OT(a, b) with cost matrix `cost` and regularisation eps."""
    return ot.sinkhorn(a, b, cost, eps, method="sinkhorn_log", numItermax=100_000, stopThr=tol)
