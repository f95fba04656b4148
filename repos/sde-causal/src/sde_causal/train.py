"""train_and_evaluate(cfg, workdir) -> metrics: one seed of every experiment, every method.

Experiments (paper Sec. 6 at CPU scale):
- type-I error on null triples (chain, fork, collider, time-reversed edge) over all SDE families;
- power on a single edge X0 -> X1, split into drift edges and diffusion-only edges;
- the same null triples and edges observed at irregular, per-path random times (`*_irregular`);
- whole-graph recovery (SHD, F1) on random 4-5 variable DAGs;
- partial observation: the same kind of DAG with `n_hidden` variables dropped, SHD against the
  induced graph on the observed ones (`shd_hidden`, a hidden common cause counted as `<->`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from . import baselines, discovery, sde
from .config import Config, validate
from .results import atomic_write_json

METHODS = ("SigKer-CI", "KCI-flat", "ParCorr-incr", "Granger", "PCMCI")
GRAPH_METHODS = ("SigKer-CI", "Granger", "PCMCI")


def _graph(d: int, edges: list[tuple[int, int]]) -> np.ndarray:
    g = np.zeros((d, d), dtype=bool)
    for a, b in edges:
        g[a, b] = True
    return g


# name -> (graph, tested edge i -> j, conditioning set): each hypothesis is true (a null).
NULL_TRIPLES = {
    "chain": (_graph(3, [(0, 1), (1, 2)]), 0, 2, (1,)),
    "fork": (_graph(3, [(0, 1), (0, 2)]), 1, 2, (0,)),
    "collider": (_graph(3, [(0, 2), (1, 2)]), 0, 1, ()),
    "reversed": (_graph(2, [(0, 1)]), 1, 0, ()),
}


def make_data(
    graph: np.ndarray,
    family: str,
    cfg: Config,
    seed: int,
    irregular: bool | None = None,
    observed: list[int] | None = None,
) -> discovery.PathData:
    """Simulate the SDE of `graph` in `family` and observe it as the config says.

    `irregular` overrides `cfg.irregular`; `observed` keeps only those variables (the others
    are simulated but hidden).
    """
    model = sde.model_from_graph(graph, family, np.random.default_rng([seed, 1]), cfg.delay)
    fine = sde.simulate(model, cfg.n_paths, cfg.fine_steps, seed)
    irregular = cfg.irregular if irregular is None else irregular
    paths, times = sde.observe(fine, cfg.n_obs, seed, irregular=irregular)
    if observed is not None:
        paths = paths[..., observed]
    return discovery.PathData(paths, times, cfg.cut, cfg.horizon)


def hidden_variables(graph: np.ndarray, n_hidden: int) -> list[int]:
    """The n_hidden variables with most children (ties: lowest index): hidden common causes."""
    order = sorted(range(len(graph)), key=lambda k: (-int(graph[k].sum()), k))
    return sorted(order[:n_hidden])


def edge_tests(data: discovery.PathData, cfg: Config, seed: int) -> dict[str, discovery.EdgeTest]:
    """Every method as an edge test (i, j, S) -> p on the same data."""
    return {
        "SigKer-CI": discovery.SigKerTest(data, cfg.refinement, cfg.n_perm, cfg.ridge, seed),
        "KCI-flat": baselines.KCIFlatTest(data),
        "ParCorr-incr": baselines.PartialCorrIncrementTest(data),
        "Granger": baselines.GrangerTest(data, cfg.lags),
        "PCMCI": baselines.PCMCITest(data, cfg.lags),
    }


def recover(data: discovery.PathData, method: str, cfg: Config, seed: int) -> np.ndarray:
    """Estimated graph of one whole-graph method."""
    if method == "SigKer-CI":
        test = discovery.SigKerTest(data, cfg.refinement, cfg.n_perm, cfg.ridge, seed)
        return discovery.discover(data.d, test, cfg.alpha)[0]
    if method == "Granger":
        return baselines.granger_graph(data, cfg.alpha, cfg.lags)
    return baselines.pcmci_graph(data, cfg.alpha, cfg.lags)


def _jobs(cfg: Config) -> list[tuple]:
    jobs: list[tuple] = []
    edge = _graph(2, [(0, 1)])
    for family in sde.FAMILIES:
        for graph, i, j, cond in NULL_TRIPLES.values():
            jobs += [("type1", graph, family, i, j, cond)] * cfg.null_reps
        kind = "power_diffusion" if family == "diffusion" else "power_drift"
        reps = cfg.power_reps * (len(sde.FAMILIES) - 1) if family == "diffusion" else cfg.power_reps
        jobs += [(kind, edge, family, 0, 1, ())] * reps
    rng = np.random.default_rng([cfg.seed, 2])
    for g in range(cfg.n_graphs):
        graph = sde.random_dag(int(rng.integers(4, 6)), rng)
        jobs.append(("graph", graph, sde.FAMILIES[(cfg.seed + g) % len(sde.FAMILIES)], 0, 0, ()))
    # appended after the regular jobs, whose seeds (job indices) stay as they were
    drift_families = [f for f in sde.FAMILIES if f != "diffusion"]
    for r in range(cfg.irregular_reps):  # each null triple once, families in turn
        for t, (graph, i, j, cond) in enumerate(NULL_TRIPLES.values()):
            family = sde.FAMILIES[(r + t) % len(sde.FAMILIES)]
            jobs.append(("type1_irregular", graph, family, i, j, cond))
        for family in drift_families:
            jobs.append(("power_drift_irregular", edge, family, 0, 1, ()))
            jobs.append(("power_diffusion_irregular", edge, "diffusion", 0, 1, ()))
    if cfg.n_hidden:
        for g in range(cfg.n_graphs):
            graph = sde.random_dag(int(rng.integers(4, 6)) + cfg.n_hidden, rng)
            family = sde.FAMILIES[(cfg.seed + g) % len(sde.FAMILIES)]
            jobs.append(("graph_hidden", graph, family, 0, 0, ()))
    return jobs


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Run every experiment for cfg.seed; returns `{"<method>/<metric>": value}`."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    outcomes: dict[str, list[float]] = {}
    jobs = _jobs(cfg)
    bar = tqdm(jobs, desc=f"seed {cfg.seed}", disable=cfg.quiet or not sys.stderr.isatty())
    for k, (kind, graph, family, i, j, cond) in enumerate(bar):
        seed = cfg.seed * 100_003 + k
        if kind == "graph_hidden":
            observed = [
                v for v in range(len(graph)) if v not in hidden_variables(graph, cfg.n_hidden)
            ]
            data = make_data(graph, family, cfg, seed, observed=observed)
            truth = np.logical_or(*discovery.induced_graph(graph, observed))
            for m in GRAPH_METHODS:
                est = recover(data, m, cfg, seed)
                outcomes.setdefault(f"{m}/shd_hidden", []).append(discovery.shd(truth, est))
            continue
        data = make_data(graph, family, cfg, seed, irregular=kind.endswith("_irregular") or None)
        if kind == "graph":
            for m in GRAPH_METHODS:
                est = recover(data, m, cfg, seed)
                outcomes.setdefault(f"{m}/shd", []).append(discovery.shd(graph, est))
                outcomes.setdefault(f"{m}/f1", []).append(discovery.f1(graph, est))
            continue
        for m, test in edge_tests(data, cfg, seed).items():
            outcomes.setdefault(f"{m}/{kind}", []).append(float(test(i, j, cond) < cfg.alpha))
    metrics = {key: float(np.mean(v)) for key, v in sorted(outcomes.items())}
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
