"""The benchmark: POT on bipartite graphs, solver tuning on validation instances, the sweep of
families x sizes x seeds, the side-by-side solver comparison, negative controls and timing rows;
then claims (claims.py), figures, and <results-dir>/<preset>.json (runs/<preset>/ unless
--results-dir says otherwise)."""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings

import numpy as np
from tqdm import tqdm

from . import baselines, data, solvers
from .claims import CAPPED_ITER, compute_claims, figures, performance
from .config import SOLVERS, Config, validate
from .results import read_json, results_document, summarize, write_results
from .runtime import resolve_device, results_dir_of
from .train import (
    EXACT_NAMES,
    evaluate_instance,
    exact_reference,
    generate,
    pin_threads,
    solve,
    stage_metrics,
)

PAPER = "oft-sinkhorn"
# The same small grid (3 settings) for every solver, default last; damping -0.2 is over-relaxation.
GRID = {
    "jacobi": [{"damping": d} for d in (-0.2, 0.25, 0.5)],
    "anderson": [{"memory": m} for m in (5, 20, 10)],
    "lbfgs": [{"memory": m} for m in (5, 20, 10)],
}
VALIDATION_SEED = 1000  # never among the benchmark seeds
VALIDATION_FAMILIES = ("netgen", "netgen-node")


def pot_comparison(cfg: Config, seed: int) -> dict[str, float]:
    """OFT-Sinkhorn on a bipartite graph against POT's Sinkhorn at the same eps (and, as the
    negative control, at twice that eps)."""
    inst, a, b, cost = data.bipartite(cfg.bipartite_size, cfg.bipartite_size, seed)
    start = time.perf_counter()
    reference = baselines.pot_sinkhorn(a, b, cost, cfg.bipartite_eps)
    pot_seconds = time.perf_counter() - start
    other = baselines.pot_sinkhorn(a, b, cost, 2 * cfg.bipartite_eps)
    pin_threads(cfg.threads)
    (stage,) = solvers.oft_sinkhorn(
        inst,
        (cfg.bipartite_eps,),
        tol=1e-12,
        max_iter=100_000,
        kernel=cfg.kernel,
        device=cfg.device,
    )
    plan = stage.flow.reshape(cost.shape)
    return {
        "max_abs_diff": float(np.abs(plan - reference).max()),
        "max_abs_diff_2eps": float(np.abs(plan - other).max()),
        "oft_seconds": stage.seconds,
        "pot_seconds": pot_seconds,
    }


def tune(cfg: Config) -> dict:
    """Each solver's setting from GRID with the fewest iterations to tolerance over the whole
    schedule on the validation instances. Iterations, not seconds, so that the choice is
    deterministic. Settings run default (last in the grid) first; a setting stops once it has
    spent the best total so far (it cannot win) or misses tol at a stage, and then scores inf.
    """
    instances = [
        generate(f, cfg.tune_n, VALIDATION_SEED, cfg.degree, cfg.node_share)
        for f in VALIDATION_FAMILIES
    ]
    scores, chosen = {}, {}
    for solver, grid in GRID.items():
        best = None
        for setting in grid[::-1]:
            run = dataclasses.replace(cfg, solver=solver, **setting)
            total = 0.0
            budget = int(best) if best is not None and np.isfinite(best) else 10**9
            for inst in instances:
                try:
                    stages = solve(inst, run, budget=max(budget - int(total), 0))
                except FloatingPointError:
                    stages = []
                done = len(stages) == len(cfg.eps) and all(s.converged for s in stages)
                total = total + sum(s.iterations for s in stages) if done else float("inf")
                if not done:
                    break
            scores[f"{solver} {setting}"] = total
            if best is None or total < best:
                best, chosen[solver] = total, setting
        if not np.isfinite(best):
            chosen[solver] = grid[-1]
    return {
        "grid": GRID,
        "validation": {"families": list(VALIDATION_FAMILIES), "n": cfg.tune_n},
        "validation_seed": VALIDATION_SEED,
        "score": "total iterations to tol over the schedule and instances (inf: a stage missed "
        "tol, or the setting spent the best total without finishing)",
        "scores": scores,
        "chosen": chosen,
    }


def add(table: dict, key, metrics: dict) -> None:
    for name, value in metrics.items():
        table.setdefault(key, {}).setdefault(name, []).append(value)


def progress(cfg: Config, runs, desc: str):
    return tqdm(runs, desc=desc, disable=cfg.quiet or not sys.stderr.isatty())


def sweep(cfg: Config, references: dict) -> dict:
    """Metrics of every (family, N) over the seeds with cfg's solver, plus timing rows."""
    runs = [(f, n, s) for f in cfg.families for n in cfg.sizes for s in cfg.seeds]
    runs += [(f, n, cfg.seeds[0]) for f in ("uniform", "netgen") for n in cfg.timing_sizes]
    table: dict = {}
    bar = progress(cfg, runs, "sweep")
    for family, n, seed in bar:
        inst = generate(family, n, seed, cfg.degree, cfg.node_share)
        references[(family, n, seed)] = exact_reference(inst)
        metrics = evaluate_instance(inst, cfg, references[(family, n, seed)])
        bar.set_postfix(family=family, n=n, gap=f"{metrics['restored_gap']:.1e}")
        add(table, (family, n), metrics)
    return table


def compare(cfg: Config, chosen: dict, references: dict) -> dict:
    """Every solver, tuned, on the same comparison instances with a budget large enough for
    plain OFT-Sinkhorn to reach the tolerance."""
    runs = [(sol, f, s) for sol in SOLVERS for f in cfg.compare_families for s in cfg.seeds]
    table: dict = {}
    for solver, family, seed in progress(cfg, runs, "solvers"):
        inst = generate(family, cfg.compare_n, seed, cfg.degree, cfg.node_share)
        key = (family, cfg.compare_n, seed)
        if key not in references:
            references[key] = exact_reference(inst)
        run = dataclasses.replace(
            cfg, solver=solver, max_iter=cfg.compare_max_iter, **chosen[solver]
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", solvers.ConvergenceWarning)
            add(table, (solver, family), evaluate_instance(inst, run, references[key]))
    return table


def controls(cfg: Config, references: dict) -> dict:
    """Negative controls at N = control_n: the solver capped at CAPPED_ITER iterations per stage
    (uncapacitated families) and the solver with every capacity dropped (capacitated ones)."""
    table: dict = {}
    capped_cfg = dataclasses.replace(cfg, solver="jacobi", max_iter=CAPPED_ITER, damping=0.5)
    fams = [f for f in cfg.families if f in ("uniform", "netgen")]
    caps = [f for f in cfg.families if f in ("netgen-cap", "netgen-node")]
    runs = [("capped", f, s) for f in fams for s in cfg.seeds]
    runs += [("no-capacities", f, s) for f in caps for s in cfg.seeds]
    for kind, family, seed in progress(cfg, runs, "controls"):
        inst = generate(family, cfg.control_n, seed, cfg.degree, cfg.node_share)
        key = (family, cfg.control_n, seed)
        if key not in references:
            references[key] = exact_reference(inst)
        optimum = references[key]["optimum"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", solvers.ConvergenceWarning)
            if kind == "capped":
                metrics = stage_metrics(inst, solve(inst, capped_cfg), cfg.eps, optimum)
            else:
                free = dataclasses.replace(
                    inst,
                    capacity=np.full(inst.n_arcs, np.inf),
                    node_capacity=np.full(inst.n, np.inf),
                )
                metrics = stage_metrics(inst, solve(free, cfg), cfg.eps, optimum)
        add(table, (kind, family), metrics)
    return table


def collect_metrics(cfg, table, compared, controlled, pot_runs) -> dict[str, dict[str, dict]]:
    """The results schema's metrics: one block per method, keys '<family>/n<N>/<metric>'."""
    ours = {
        f"bipartite/{k}": summarize([r[k] for r in pot_runs])
        for k in ("max_abs_diff", "oft_seconds")
    }
    metrics = {
        "OFT-Sinkhorn": ours,
        "POT": {"bipartite/seconds": summarize([r["pot_seconds"] for r in pot_runs])},
        "control: POT at 2 eps": {
            "bipartite/max_abs_diff": summarize([r["max_abs_diff_2eps"] for r in pot_runs])
        },
        "cost-blind floor": {},
    }
    for (family, n), cols in table.items():
        for key, values in cols.items():
            if key.removesuffix("_seconds") in EXACT_NAMES:
                block = EXACT_NAMES[key.removesuffix("_seconds")]
                metrics.setdefault(block, {})[f"{family}/n{n}/seconds"] = summarize(values)
            elif key == "floor_gap":
                metrics["cost-blind floor"][f"{family}/n{n}/gap"] = summarize(values)
            elif key != "optimum":
                ours[f"{family}/n{n}/{key}"] = summarize(values)
        metrics.setdefault("HiGHS", {})[f"{family}/n{n}/optimum"] = summarize(cols["optimum"])
    for (solver, family), cols in compared.items():
        block = metrics.setdefault(f"OFT-Sinkhorn ({solver})", {})
        for key, values in cols.items():
            if not key.endswith("_seconds") and key not in ("optimum", "floor_gap"):
                block[f"{family}/n{cfg.compare_n}/{key}"] = summarize(values)
    names = {
        "capped": f"control: jacobi capped at {CAPPED_ITER} it/stage",
        "no-capacities": "control: capacities dropped",
    }
    for (kind, family), cols in controlled.items():
        block = metrics.setdefault(names[kind], {})
        for key, values in cols.items():
            block[f"{family}/n{cfg.control_n}/{key}"] = summarize(values)
    return metrics


def run_bench(cfg: Config) -> dict:
    """Run the preset, write <results-dir>/<name>.json and its figures; the document as read back."""
    cfg = dataclasses.replace(validate(cfg), device=resolve_device(cfg.device))
    start = time.perf_counter()
    pot_runs = [pot_comparison(cfg, seed) for seed in cfg.seeds]
    tuning = tune(cfg) if cfg.tune else {"chosen": {s: {} for s in SOLVERS}}
    tuned = dataclasses.replace(cfg, **tuning["chosen"][cfg.solver])
    references: dict = {}
    table = sweep(tuned, references)
    compared = compare(cfg, tuning["chosen"], references)
    controlled = controls(tuned, references)
    doc = results_document(
        PAPER,
        cfg.name,
        list(cfg.seeds),
        collect_metrics(cfg, table, compared, controlled, pot_runs),
        compute_claims(tuned, table, compared, controlled, pot_runs),
        time.perf_counter() - start,
        cfg.device,
        performance(tuned, table, compared),
    )
    doc["tuning"] = tuning | {"solver": cfg.solver}
    doc["config"] = dataclasses.asdict(tuned)
    prefix = "" if cfg.name == "quick" else f"{cfg.name}-"
    figs = figures(tuned, table, compared, prefix)
    path = write_results(results_dir_of(cfg), cfg.name, doc, figs)
    return read_json(path, "results file")  # as a reader sees it
