"""The benchmark's data sets: null triples, single edges and random graphs, simulated and observed.

Every data set is a deterministic function of its seed (SDE parameters, Brownian paths and
observation times). Real data enters through `paths_io.read_paths` and `discovery.PathData`.
"""

from __future__ import annotations

import numpy as np

from . import discovery, sde
from .config import Config


def graph_of(d: int, edges: list[tuple[int, int]]) -> np.ndarray:
    """Boolean (d, d) adjacency with the given parent -> child edges."""
    g = np.zeros((d, d), dtype=bool)
    for a, b in edges:
        g[a, b] = True
    return g


# name -> (graph, tested edge i -> j, conditioning set): each hypothesis is true (a null).
NULL_TRIPLES = {
    "chain": (graph_of(3, [(0, 1), (1, 2)]), 0, 2, (1,)),
    "fork": (graph_of(3, [(0, 1), (0, 2)]), 1, 2, (0,)),
    "collider": (graph_of(3, [(0, 2), (1, 2)]), 0, 1, ()),
    "reversed": (graph_of(2, [(0, 1)]), 1, 0, ()),
}
EDGE = graph_of(2, [(0, 1)])  # the power experiment tests 0 -> 1 on this graph


def make_data(
    graph: np.ndarray,
    family: str,
    cfg: Config,
    seed: int,
    n_paths: int | None = None,
    irregular: bool | None = None,
    observed: list[int] | None = None,
) -> discovery.PathData:
    """Simulate the SDE of `graph` in `family` and observe it as the config says.

    `n_paths` overrides `cfg.n_paths`, `irregular` overrides `cfg.irregular`; `observed` keeps
    only those variables (the others are simulated but hidden).
    """
    model = sde.model_from_graph(graph, family, np.random.default_rng([seed, 1]), cfg.delay)
    n = cfg.n_paths if n_paths is None else n_paths
    fine = sde.simulate(model, n, cfg.fine_steps, seed)
    irregular = cfg.irregular if irregular is None else irregular
    paths, times = sde.observe(fine, cfg.n_obs, seed, irregular=irregular)
    if observed is not None:
        paths = paths[..., observed]
    return discovery.PathData(paths, times, cfg.cut, cfg.horizon)


def hidden_variables(graph: np.ndarray, n_hidden: int) -> list[int]:
    """The n_hidden variables with most children (ties: lowest index): hidden common causes."""
    order = sorted(range(len(graph)), key=lambda k: (-int(graph[k].sum()), k))
    return sorted(order[:n_hidden])
