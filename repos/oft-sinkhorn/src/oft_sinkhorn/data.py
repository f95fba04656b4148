"""Min-cost-flow instances: the container, its checks, two generators and the DIMACS `.min` format.

Sign convention (fixed here, used everywhere): `supply[i] > 0` is a source, `supply[i] < 0` a sink,
and a feasible flow satisfies `outflow - inflow = supply` at every node (the paper's `P1 - P^T 1 = s`).
Capacities are `inf` where an arc or node is uncapacitated. Generators are deterministic in the seed.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike

INF = math.inf


@dataclasses.dataclass(frozen=True)
class Instance:
    """A directed min-cost-flow problem on `n` nodes with arcs `tail[e] -> head[e]`."""

    n: int
    tail: np.ndarray
    head: np.ndarray
    cost: np.ndarray
    capacity: np.ndarray
    supply: np.ndarray
    node_capacity: np.ndarray
    """Bound on each node's throughput (its inflow, the paper's `q`)."""

    @property
    def n_arcs(self) -> int:
        return int(self.tail.shape[0])

    @property
    def total_supply(self) -> float:
        return float(self.supply[self.supply > 0].sum())


def make_instance(
    n: int,
    tail: ArrayLike,
    head: ArrayLike,
    cost: ArrayLike,
    supply: ArrayLike,
    capacity: ArrayLike | None = None,
    node_capacity: ArrayLike | None = None,
) -> Instance:
    """Build an Instance from array-likes (missing capacities mean uncapacitated) and validate it."""
    tail, head = np.asarray(tail, dtype=np.int64), np.asarray(head, dtype=np.int64)
    cost = np.asarray(cost, dtype=np.float64)
    capacity = np.full(cost.shape, INF) if capacity is None else np.asarray(capacity, np.float64)
    node_capacity = np.full(n, INF) if node_capacity is None else np.asarray(node_capacity, float)
    inst = Instance(n, tail, head, cost, capacity, np.asarray(supply, np.float64), node_capacity)
    validate(inst)
    return inst


def validate(inst: Instance) -> None:
    """Raise ValueError (naming the bad value) unless `inst` is a well-posed, feasible MCF problem."""
    e = inst.n_arcs
    for name, arr, size in [
        ("head", inst.head, e),
        ("cost", inst.cost, e),
        ("capacity", inst.capacity, e),
        ("supply", inst.supply, inst.n),
        ("node_capacity", inst.node_capacity, inst.n),
    ]:
        if arr.shape != (size,):
            raise ValueError(f"{name} has shape {arr.shape}, expected ({size},)")
    if e and (
        min(inst.tail.min(), inst.head.min()) < 0 or max(inst.tail.max(), inst.head.max()) >= inst.n
    ):
        raise ValueError(f"arc endpoints must lie in [0, {inst.n}), got tail/head outside it")
    if np.any(inst.tail == inst.head):
        raise ValueError(
            f"self-loop arc at index {int(np.argmax(inst.tail == inst.head))}; arcs join distinct nodes"
        )
    for name, arr in [("cost", inst.cost), ("supply", inst.supply)]:
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError(
                f"{name} must be finite, got {arr[bad][0]} at index {int(np.argmax(bad))}"
            )
    for name, arr in [("capacity", inst.capacity), ("node_capacity", inst.node_capacity)]:
        if np.any(np.isnan(arr) | (arr < 0)):
            raise ValueError(
                f"{name} must be >= 0 (inf for none), got {arr[np.isnan(arr) | (arr < 0)][0]}"
            )
    imbalance = float(inst.supply.sum())
    if abs(imbalance) > 1e-9 * max(1.0, float(np.abs(inst.supply).sum())):
        raise ValueError(f"supplies must sum to 0 (flow balance), got sum {imbalance:g}")
    _check_no_uncapacitated_negative_cycle(inst)
    _check_feasible(inst)


def _check_no_uncapacitated_negative_cycle(inst: Instance) -> None:
    free = np.isinf(inst.capacity)
    if not np.any(free & (inst.cost < 0)):
        return
    graph = nx.DiGraph()
    for t, h, c in zip(inst.tail[free], inst.head[free], inst.cost[free]):
        if not graph.has_edge(t, h) or graph[t][h]["weight"] > c:
            graph.add_edge(int(t), int(h), weight=float(c))
    if nx.negative_edge_cycle(graph):
        raise ValueError(
            "uncapacitated arcs form a negative-cost cycle: the min-cost flow is unbounded"
        )


def split_nodes(inst: Instance) -> Instance:
    """Node capacities as arc capacities: node i becomes i (inflow side) -> n + i (outflow side)."""
    capped = np.flatnonzero(np.isfinite(inst.node_capacity))
    if capped.size == 0:
        return inst
    out_id = np.arange(inst.n)
    out_id[capped] = inst.n + np.arange(capped.size)
    supply = np.concatenate([inst.supply, np.zeros(capped.size)])
    # The whole supply (either sign) sits on the outflow side, so the split arc carries exactly the
    # inflow, which the bound caps (the earlier split put demands on the inflow side and widened
    # the arc by the supply: a capped node with its own supply got the bound Q + |s|).
    supply[out_id[capped]] = inst.supply[capped]
    supply[capped] = 0.0
    return Instance(
        n=inst.n + capped.size,
        tail=np.concatenate([out_id[inst.tail], capped]),
        head=np.concatenate([inst.head, out_id[capped]]),
        cost=np.concatenate([inst.cost, np.zeros(capped.size)]),
        capacity=np.concatenate([inst.capacity, inst.node_capacity[capped]]),
        supply=supply,
        node_capacity=np.full(inst.n + capped.size, INF),
    )


def _check_feasible(inst: Instance) -> None:
    """Max-flow from a super source to a super sink must carry the whole supply."""
    flat = split_nodes(inst)
    graph = nx.DiGraph()
    graph.add_nodes_from(["S", "T"])
    for t, h, c in zip(flat.tail.tolist(), flat.head.tolist(), flat.capacity.tolist()):
        old = graph[t][h]["capacity"] if graph.has_edge(t, h) else 0.0
        graph.add_edge(t, h, capacity=old + c)  # parallel arcs add up; inf stays inf
    for i, s in enumerate(flat.supply.tolist()):
        if s > 0:
            graph.add_edge("S", i, capacity=s)
        elif s < 0:
            graph.add_edge(i, "T", capacity=-s)
    for _, _, attrs in graph.edges(data=True):
        if math.isinf(attrs["capacity"]):
            del attrs["capacity"]  # networkx reads a missing capacity as infinite
    routed = nx.maximum_flow_value(graph, "S", "T") if flat.total_supply > 0 else 0.0
    if routed < flat.total_supply * (1 - 1e-9):
        raise ValueError(
            f"no feasible flow: only {routed:g} of the total supply {flat.total_supply:g} can reach the demands"
        )


def _supplies(rng: np.random.Generator, n: int, sources, sinks, total: int) -> np.ndarray:
    supply = np.zeros(n)
    supply[sources] = rng.multinomial(total, np.full(len(sources), 1 / len(sources)))
    supply[sinks] = -rng.multinomial(total, np.full(len(sinks), 1 / len(sinks)))
    return supply


def _dedupe(tail: np.ndarray, head: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Drop self-loops and repeated arcs, keeping the first occurrence (so the order is seeded)."""
    keep = tail != head
    _, first = np.unique(tail[keep] * n + head[keep], return_index=True)
    idx = np.sort(first)
    return tail[keep][idx], head[keep][idx]


def uniform_mcf(n: int, seed: int, degree: int = 8, supply_per_terminal: int = 100) -> Instance:
    """Uniform-MCF: random arcs (mean out-degree `degree`) on a random Hamiltonian cycle, integer
    costs U{10..100}, n/10 sources and n/10 sinks; uncapacitated and strongly connected (feasible)."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    tail = np.concatenate([perm, rng.integers(0, n, n * degree)])
    head = np.concatenate([np.roll(perm, -1), rng.integers(0, n, n * degree)])
    tail, head = _dedupe(tail, head, n)
    k = max(1, n // 10)
    terminals = rng.permutation(n)[: 2 * k]
    supply = _supplies(rng, n, terminals[:k], terminals[k:], supply_per_terminal * k)
    return make_instance(n, tail, head, rng.integers(10, 101, tail.size), supply)


def netgen_mcf(
    n: int,
    seed: int,
    degree: int = 8,
    capacitated: bool = True,
    total_supply: int = 10_000,
    terminals: int = 3,
    node_share: float = 0.0,
) -> Instance:
    """NETGEN-style: `terminals` sources and sinks, a skeleton of chains source -> transshipment
    nodes -> every sink (30% of its arcs at the maximum cost 100), random arcs up to mean out-degree
    `degree`, integer costs U{10..100}. Capacitated: skeleton arcs carry the total supply (so the
    instance stays feasible), random arcs get U{total/20..total/4}. Node-capacitated
    (`node_share` > 0): that share of the transshipment nodes stays off the skeleton (which keeps
    the instance feasible) and gets a throughput bound U{total/20..total/4}, like an arc."""
    if not 0 <= node_share <= 1:
        raise ValueError(f"node_share must lie in [0, 1], got {node_share}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    sources, sinks, middle = (
        order[:terminals],
        order[terminals : 2 * terminals],
        order[2 * terminals :],
    )
    skel_t, skel_h = [], []
    bounded = middle[rng.random(middle.size) < node_share] if node_share > 0 else middle[:0]
    chains = np.array_split(middle[~np.isin(middle, bounded)], terminals)
    for src, chain in zip(sources, chains):
        path = np.concatenate([[src], chain])
        skel_t += [path[:-1], np.full(terminals, path[-1])]
        skel_h += [path[1:], sinks]
    skel_t, skel_h = np.concatenate(skel_t), np.concatenate(skel_h)
    n_skel = skel_t.size
    tail = np.concatenate([skel_t, rng.integers(0, n, n * degree)])
    head = np.concatenate([skel_h, rng.integers(0, n, n * degree)])
    tail, head = _dedupe(
        tail, head, n
    )  # skeleton arcs come first and are distinct, so they all stay
    cost = rng.integers(10, 101, tail.size).astype(float)
    cost[:n_skel][rng.random(n_skel) < 0.3] = 100
    capacity = None
    if capacitated:
        capacity = rng.integers(total_supply // 20, total_supply // 4 + 1, tail.size).astype(float)
        capacity[:n_skel] = total_supply
    supply = _supplies(rng, n, sources, sinks, total_supply)
    node_capacity = np.full(n, INF)
    node_capacity[bounded] = rng.integers(total_supply // 20, total_supply // 4 + 1, bounded.size)
    return make_instance(n, tail, head, cost, supply, capacity, node_capacity)


def bipartite(m: int, k: int, seed: int) -> tuple[Instance, np.ndarray, np.ndarray, np.ndarray]:
    """OT as OFT: arcs from each of m sources to each of k sinks, histograms a, b and costs
    U[0, 1). Returns the instance and (a, b, M) for POT."""
    rng = np.random.default_rng(seed)
    a, b = rng.random(m) + 0.5, rng.random(k) + 0.5
    a, b = a / a.sum(), b / b.sum()
    cost = rng.random((m, k))
    tail, head = np.meshgrid(np.arange(m), m + np.arange(k), indexing="ij")
    inst = make_instance(m + k, tail.ravel(), head.ravel(), cost.ravel(), np.concatenate([a, -b]))
    return inst, a, b, cost


# DIMACS min-cost-flow format: "p min N M", "n ID SUPPLY", "a TAIL HEAD LOW CAP COST" (1-based ids).


def write_dimacs(inst: Instance, path: str | Path, comment: str = "") -> None:
    """Write `inst` as a DIMACS `.min` file; uncapacitated arcs get the total supply as capacity."""
    values = np.concatenate([inst.cost, inst.supply, inst.capacity[np.isfinite(inst.capacity)]])
    if np.any(values != np.round(values)) or np.isfinite(inst.node_capacity).any():
        raise ValueError(
            "DIMACS .min holds integer data without node capacities; this instance has other data"
        )
    cap = np.where(np.isinf(inst.capacity), inst.total_supply, inst.capacity)
    lines = [f"c {line}" for line in comment.splitlines()] + [f"p min {inst.n} {inst.n_arcs}"]
    lines += [f"n {i + 1} {int(s)}" for i, s in enumerate(inst.supply) if s != 0]
    lines += [
        f"a {t + 1} {h + 1} 0 {int(u)} {int(c)}"
        for t, h, u, c in zip(inst.tail, inst.head, cap, inst.cost)
    ]
    Path(path).write_text("\n".join(lines) + "\n")


def read_dimacs(path: str | Path) -> Instance:
    """Read a DIMACS `.min` file; a malformed line raises ValueError naming the file and line."""
    if not Path(path).is_file():
        raise ValueError(f"no DIMACS file at {path}")
    n = m = None
    supply: dict[int, int] = {}
    arcs: list[tuple[int, int, int, int]] = []
    for lineno, raw in enumerate(Path(path).read_text().splitlines(), start=1):
        fields = raw.split()
        if not fields or fields[0] == "c":
            continue
        where, kind = f"{path}:{lineno}: {raw.strip()!r}:", fields[0]
        if kind == "p":
            if (
                n is not None
                or len(fields) != 4
                or fields[1] != "min"
                or not "".join(fields[2:]).isdigit()
            ):
                raise ValueError(f"{where} expected one 'p min NODES ARCS' line")
            n, m = int(fields[2]), int(fields[3])
            continue
        if kind not in ("n", "a"):
            raise ValueError(f"{where} expected a 'c', 'p', 'n' or 'a' line")
        if n is None:
            raise ValueError(f"{where} '{kind}' line before the 'p min' line")
        try:
            values = [int(f) for f in fields[1:]]
        except ValueError:
            raise ValueError(f"{where} expected integer fields") from None
        n_ids, want = (1, 2) if kind == "n" else (2, 5)
        if len(values) != want or not all(1 <= v <= n for v in values[:n_ids]):
            raise ValueError(f"{where} expected {want} integers with node ids in 1..{n}")
        if kind == "n":
            supply[values[0] - 1] = values[1]
        elif values[2] != 0:
            raise ValueError(f"{where} lower bound {values[2]} is not supported (expected 0)")
        else:
            arcs.append((values[0] - 1, values[1] - 1, values[3], values[4]))
    if n is None:
        raise ValueError(f"{path}: no 'p min NODES ARCS' line")
    if len(arcs) != m:
        raise ValueError(f"{path}: the 'p' line announces {m} arcs, found {len(arcs)}")
    s = np.zeros(n)
    s[list(supply)] = list(supply.values())
    table = np.array(arcs, dtype=np.int64).reshape(-1, 4)
    return make_instance(n, table[:, 0], table[:, 1], table[:, 3], s, table[:, 2])
