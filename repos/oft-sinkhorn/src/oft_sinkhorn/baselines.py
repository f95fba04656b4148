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
        [flow_dict[t][h][e] for e, (t, h) in enumerate(zip(inst.tail.tolist(), inst.head.tolist()))]
    )
    return ExactSolution(float(cost), flow.astype(float), time.perf_counter() - start)


def highs_lp(inst: Instance) -> ExactSolution:
    """The OFT linear program (Eq. 1, with capacities) by scipy's HiGHS; works on real data."""
    start = time.perf_counter()
    arcs = np.arange(inst.n_arcs)
    ones = np.ones(inst.n_arcs)
    incidence = scipy.sparse.csr_array(
        (
            np.concatenate([ones, -ones]),
            (np.concatenate([inst.tail, inst.head]), np.concatenate([arcs, arcs])),
        ),
        shape=(inst.n, inst.n_arcs),
    )
    capped = np.flatnonzero(np.isfinite(inst.node_capacity))
    inflow = scipy.sparse.csr_array((ones, (inst.head, arcs)), shape=(inst.n, inst.n_arcs))[capped]
    res = scipy.optimize.linprog(
        inst.cost,
        A_ub=inflow if capped.size else None,
        b_ub=inst.node_capacity[capped] if capped.size else None,
        A_eq=incidence,
        b_eq=inst.supply,
        bounds=np.stack([np.zeros(inst.n_arcs), inst.capacity], 1),
        method="highs",
    )
    if res.status != 0:
        raise ValueError(f"HiGHS did not find an optimum: {res.message}")
    return ExactSolution(float(res.fun), res.x, time.perf_counter() - start)


EXACT = {"ortools": ortools_mcf, "networkx": networkx_mcf, "highs": highs_lp}


def pot_sinkhorn(
    a: np.ndarray, b: np.ndarray, cost: np.ndarray, eps: float, tol: float = 1e-12
) -> np.ndarray:
    """POT's log-domain Sinkhorn plan for OT(a, b) with cost matrix `cost` and regularisation eps."""
    return ot.sinkhorn(a, b, cost, eps, method="sinkhorn_log", numItermax=100_000, stopThr=tol)
