"""train_and_evaluate(cfg, workdir) -> metrics: solve one instance with OFT-Sinkhorn and the exact
solvers, and measure the gap, the balance residual and the capacity violation of every eps stage.

"Training" here is solving: OFT-Sinkhorn has no learned parameters, only potentials per instance.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import torch

from . import baselines, data, eoft
from .config import Config, validate
from .results import atomic_write_json

EXACT_NAMES = {"ortools": "OR-Tools", "networkx": "networkx", "highs": "HiGHS"}


def generate(family: str, n: int, seed: int, degree: int) -> data.Instance:
    """One instance of a benchmark family (see config.GENERATORS)."""
    if family == "uniform":
        return data.uniform_mcf(n, seed, degree=degree)
    return data.netgen_mcf(n, seed, degree=degree, capacitated=family == "netgen-cap")


def load_instance(cfg: Config) -> data.Instance:
    return (
        data.read_dimacs(cfg.instance)
        if cfg.instance
        else generate(cfg.generator, cfg.n, cfg.seed, cfg.degree)
    )


def solve(inst: data.Instance, cfg: Config) -> list[eoft.Stage]:
    """OFT-Sinkhorn on `inst` with the config's schedule (eps relative to the largest |cost|)."""
    torch.set_num_threads(cfg.threads)
    scale = float(np.abs(inst.cost).max(initial=1.0))
    return eoft.oft_sinkhorn(
        inst,
        tuple(e * scale for e in cfg.eps),
        tol=cfg.tol,
        max_iter=cfg.max_iter,
        damping=cfg.damping,
        kernel=cfg.kernel,
        device=cfg.device,
        dtype=torch.float32 if cfg.float32 else torch.float64,
    )


def is_integral(inst: data.Instance) -> bool:
    finite_cap = inst.capacity[np.isfinite(inst.capacity)]
    return all(np.all(a == np.round(a)) for a in (inst.cost, inst.supply, finite_cap))


def evaluate_instance(inst: data.Instance, cfg: Config) -> dict[str, float]:
    """Exact optimum (every applicable exact solver, which must agree), then OFT-Sinkhorn's stages."""
    names = list(EXACT_NAMES) if is_integral(inst) else ["highs"]
    exact = {name: baselines.EXACT[name](inst) for name in names}
    optimum = exact["highs"].cost
    for name, sol in exact.items():
        if abs(sol.cost - optimum) > 1e-6 * max(1.0, abs(optimum)):
            raise RuntimeError(f"exact solvers disagree: {name} {sol.cost} vs HiGHS {optimum}")
    metrics = {"optimum": optimum} | {f"{name}_seconds": sol.seconds for name, sol in exact.items()}
    stages = solve(inst, cfg)
    gap = lambda cost: (cost - optimum) / abs(optimum)
    for rel, stage in zip(cfg.eps, stages):
        metrics[f"gap@{rel:g}"] = gap(stage.cost)
        metrics[f"residual@{rel:g}"] = stage.residual
    reached = [s.seconds for s in stages if gap(s.cost) < 0.01 and s.residual < 1e-3]
    if reached:
        metrics["seconds_to_1pct"] = reached[0]
    last = stages[-1]
    metrics |= {
        "gap": gap(last.cost),
        "residual": last.residual,
        "capacity_violation": eoft.capacity_violation(inst, last.flow),
        "iterations": float(sum(s.iterations for s in stages)),
        "seconds": last.seconds,
    }
    return metrics


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Solve cfg's instance and return its metrics; writes workdir/config.json first."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    metrics = evaluate_instance(load_instance(cfg), cfg)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
