"""Benchmark: learning rates tuned on validation instances, then every method on every problem over
the preset's seeds (seed-batched, optionally in worker processes), claims with paired intervals,
speed against a port of the official training step; writes <results-dir>/<preset>.json and figures
(results_dir empty: runs/<preset>; the committed results/ only with --results-dir results).

Split into `run_seed` (one seed's raw outputs: the tuning and every evaluation run) and `finish`
(metrics, claims, speed, figures and the results file), so that results.drive_bench can also run
the seeds as separate jobs and merge them (--partial-out / --merge, tools/launch.py).
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np
import torch

from .claims import FLOOR, OFFICIAL_KEY, ORACLE, compute_claims, paired_table, sweep_key
from .config import METHODS, OFFICIAL_INIT_PROBLEMS, Config, validate
from .data import USER, sizes
from .figures import plot_curves, plot_growth, plot_k_sweep, plot_worst
from .perf import performance
from .results import drive_bench, results_document, summarize, write_results
from .runtime import progress, results_dir_of
from .stats import paired
from .train import prepare, problem_names, run_seeds, scores

PAPER = "stch-set"
NSGA_MAX_OBJECTIVES = 255  # pymoo's non-dominated sorting (moocore) accepts at most 255 objectives
INIT_CHECK_SEEDS = 100  # seeds of the untrained-initialisation comparison (a second of CPU)
COST = {
    "nonlinear": 4.0,
    "deep": 4.0,
    "linear": 2.0,
}  # relative step cost, to start long jobs first


@dataclasses.dataclass(frozen=True)
class Job:
    """One method on a batch of seeds."""

    problem: str
    method: str
    init: str
    lr: float
    seeds: tuple[int, ...]
    steps: int
    m: int | None = None
    k: int | None = None
    check_every: int = 0
    tuning: bool = False
    """A tuning run: a diverging learning rate scores +inf instead of stopping the benchmark."""


def run_job(cfg: Config, job: Job) -> dict:
    """Run one job; its result carries the learning rate it ran with under "lr".

    A run that diverges (NaN objectives) scores +inf when tuning; an evaluation run falls back to
    the next smaller grid value, so that one unstable evaluation seed cannot stop the benchmark
    (the fallback is recorded in the JSON's tuning.used)."""
    if cfg.device == "cpu":
        torch.set_num_threads(cfg.threads)
    clock = time.perf_counter()
    smaller = sorted((lr for lr in cfg.tune_lrs if lr < job.lr), reverse=True)
    for lr in [job.lr] if job.tuning else [job.lr, *smaller]:
        run_cfg = dataclasses.replace(
            cfg, lr=lr, steps=job.steps, quiet=cfg.quiet or cfg.workers > 1
        )
        try:
            result = run_seeds(
                run_cfg, job.problem, job.method, job.seeds, job.m, job.k, job.init, job.check_every
            )
        except ValueError as exc:
            if "NaN" not in str(exc):
                raise
            continue
        del result["solutions"]  # the benchmark keeps scores only (no tensors between processes)
        return {**result, "lr": lr, "job_seconds": time.perf_counter() - clock}
    if job.tuning:
        return {
            "worst": [math.inf] * len(job.seeds),
            "diverged": True,
            "lr": job.lr,
            "job_seconds": time.perf_counter() - clock,
        }
    raise ValueError(
        f"{METHODS[job.method]} diverged (NaN) on {job.problem} at every learning rate <= {job.lr}"
    )


def run_jobs(cfg: Config, jobs: list[Job], desc: str = "jobs") -> list[dict]:
    """Results in the order of `jobs`; with cfg.workers > 1 in spawned processes (each job is
    deterministic in its inputs, so the results do not depend on the number of workers). Jobs that
    differ only in check_every run once, as the one that records the most history (the K sweep's
    point at the preset's own K and m is the main run). Unless quiet, a progress line per ~10% of
    the jobs (`desc`: the phase) with the time spent and an estimate of the time left."""
    unique: dict[Job, int] = {}
    for i, job in enumerate(jobs):
        key = same_run(job)
        if key not in unique or job.check_every > jobs[unique[key]].check_every:
            unique[key] = i
    todo = sorted(unique.values())
    done: dict[int, dict] = {}
    if cfg.workers == 1 or len(todo) < 2:
        for i in progress(todo, desc, cfg.quiet):
            done[i] = run_job(cfg, jobs[i])
    else:
        order = sorted(todo, key=lambda i: -COST.get(jobs[i].problem, 1.0) * jobs[i].steps)
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=cfg.workers, mp_context=ctx) as pool:
            futures = {pool.submit(run_job, cfg, jobs[i]): i for i in order}
            for future in progress(as_completed(futures), desc, cfg.quiet, total=len(futures)):
                done[futures[future]] = future.result()
    return [done[unique[same_run(job)]] for job in jobs]


def same_run(job: Job) -> Job:
    """The job with what does not change its numbers normalised: no history (check_every only
    adds evaluations of the averaged weights, which agree to float rounding, 1e-6 relative), and
    the problem's own m and K spelled out."""
    m, k = (job.m, job.k) if job.problem == USER else sizes(job.problem, job.m, job.k)
    return dataclasses.replace(job, check_every=0, m=m, k=k)


def gradient_methods(cfg: Config) -> list[str]:
    return [m for m in cfg.methods if m != "nsga3"]


def tune(cfg: Config, names: tuple[str, ...]) -> tuple[dict, dict]:
    """Learning rate per (problem, method): the grid value with the lowest mean log worst case on
    the validation instances cfg.tune_seeds after cfg.tune_steps steps (the same grid and budget
    for every gradient method). Returns ({problem: {label: lr}}, the tuning record)."""
    grid = cfg.tune_lrs or (cfg.lr,)
    record = {
        "grid": {"lr": list(grid)},
        "validation_seeds": list(cfg.tune_seeds),
        "steps": cfg.tune_steps,
        "criterion": "lowest mean log worst case max_i min_k f_i over the validation seeds",
        "validation_worst": {},
        "chosen": {},
    }
    methods = gradient_methods(cfg)
    jobs = [
        Job(p, meth, "ours", lr, cfg.tune_seeds, cfg.tune_steps, cfg.m, cfg.k, tuning=True)
        for p in names
        for meth in methods
        for lr in grid
    ]
    done = run_jobs(cfg, jobs, "tuning") if len(grid) > 1 else []
    record["job_seconds"] = sum(r["job_seconds"] for r in done)
    results = iter(done)
    chosen: dict[str, dict[str, float]] = {}
    for p in names:
        for meth in methods:
            label = METHODS[meth]
            if len(grid) == 1:
                chosen.setdefault(p, {})[label] = grid[0]
                continue
            worst = {lr: next(results)["worst"] for lr in grid}
            score = {lr: _log_mean(w) for lr, w in worst.items()}
            chosen.setdefault(p, {})[label] = min(grid, key=lambda lr: score[lr])
            record["validation_worst"].setdefault(p, {})[label] = {
                str(lr): float(np.mean(w)) if np.all(np.isfinite(w)) else None
                for lr, w in worst.items()
            }
    record["chosen"] = chosen
    return chosen, record


def _log_mean(values: list[float]) -> float:
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        return math.inf
    return float(np.log(arr).mean()) if (arr > 0).all() else float(arr.mean())


def sweep_points(cfg: Config) -> dict[str, list[tuple[int, int]]]:
    """{problem: [(K, m), ...]} of the K sweep (m: m_sweep, or the problem's paper m)."""
    if not cfg.k_sweep:
        return {}
    return {
        p: [(k, m) for k in cfg.k_sweep for m in (cfg.m_sweep or (sizes(p, None, None)[0],))]
        for p in cfg.sweep_problems
    }


def main_jobs(cfg: Config, names: tuple[str, ...], lrs: dict) -> list[tuple[str, str, Job]]:
    """(metric prefix, label, job) of every evaluation run."""
    out = []
    every = max(1, cfg.steps // 20)
    for p in names:
        for meth in cfg.methods:
            too_many = p == USER or sizes(p, cfg.m, cfg.k)[0] > NSGA_MAX_OBJECTIVES
            if meth == "nsga3" and too_many:
                continue
            lr = lrs[p].get(METHODS[meth], cfg.lr)
            out.append(
                (
                    p,
                    METHODS[meth],
                    Job(p, meth, "ours", lr, cfg.seeds, cfg.steps, cfg.m, cfg.k, every),
                )
            )
        if p in OFFICIAL_INIT_PROBLEMS:
            for meth in cfg.compare_init_methods:
                if meth in cfg.methods:  # the official protocol: no tuning, official init
                    job = Job(
                        p, meth, "official", cfg.official_lr, cfg.seeds, cfg.steps, cfg.m, cfg.k
                    )
                    out.append((f"{p}/{OFFICIAL_KEY}", METHODS[meth], job))
    for p, points in sweep_points(cfg).items():
        for k, m in points:
            for meth in gradient_methods(cfg):
                lr = lrs.get(p, {}).get(METHODS[meth], cfg.lr)
                job = Job(p, meth, "ours", lr, cfg.seeds, cfg.steps, m, k)
                out.append((sweep_key(p, k, m), METHODS[meth], job))
    return out


def seed_slice(prefix: str, label: str, job: Job, res: dict, i: int) -> dict:
    """Seed number i of one evaluation run (a batch of job.seeds) as JSON-able per-seed outputs:
    scores, the learning rate it ran with, its share of the batch's seconds and its history."""
    out = {
        "prefix": prefix,
        "label": label,
        "method": job.method,
        "lr": res["lr"],
        "worst": res["worst"][i],
        "average": res["average"][i],
        "seconds": res["seconds"] / len(job.seeds),
        "history": [[step, worst[i]] for step, worst in res["history"]] if job.check_every else [],
        "untrained": {key: res["untrained"][key][i] for key in ("worst", "average")},
    }
    if "truth" in res:
        out["truth"] = {key: res["truth"][key][i] for key in ("worst", "average")}
    return out


def run_batch(cfg: Config) -> dict[int, dict]:
    """Tuning, then every evaluation run on all of cfg.seeds at once (one seed-batched job per
    run); {seed: that seed's outputs}, each carrying the (seed-independent) tuning record."""
    names = problem_names(cfg)
    clock = time.perf_counter()
    lrs, tuning = tune(cfg, names)
    tuned = time.perf_counter()
    runs = main_jobs(cfg, names, lrs)
    results = run_jobs(cfg, [job for _, _, job in runs], "evaluation")
    phases = {"tuning": tuned - clock, "evaluation": time.perf_counter() - tuned}
    phases["tuning_job_seconds"] = tuning.pop("job_seconds")
    phases.update(job_seconds(runs, results))
    return {
        seed: {
            "tuning": tuning,
            "runs": [seed_slice(p, lab, job, res, i) for (p, lab, job), res in zip(runs, results)],
            "phase_seconds": phases,
        }
        for i, seed in enumerate(cfg.seeds)
    }


def job_seconds(runs: list[tuple[str, str, Job]], results: list[dict]) -> dict[str, float]:
    """Seconds of the evaluation jobs by phase, summed over jobs (a job run once for two entries
    counted once): the CPU-seconds each phase costs on one core, to be divided by the workers."""
    out: dict[str, float] = {}
    seen: set[Job] = set()
    for (prefix, _, job), res in zip(runs, results):
        if same_run(job) in seen:
            continue
        seen.add(same_run(job))
        phase = (
            "nsga3"
            if job.method == "nsga3"
            else "k_sweep"
            if job.k is not None and prefix == sweep_key(job.problem, job.k, job.m)
            else "official_protocol"
            if OFFICIAL_KEY in prefix
            else "main"
        )
        out[f"{phase}_job_seconds"] = out.get(f"{phase}_job_seconds", 0.0) + res["job_seconds"]
    return out


_BATCH: dict[Config, dict[int, dict]] = {}
"""Seeds of the batch run_seed ran last in this process that it has not handed out yet."""


def run_seed(cfg: Config, seed: int) -> dict:
    """One seed's raw outputs: the tuning record and, per evaluation run, its scores, learning rate,
    seconds and history.

    The tuning runs on cfg.tune_seeds only, so every job of a split bench finds the same learning
    rates (finish checks it). The gradient methods run seed-batched (train.py): the first call runs
    every seed of cfg.seeds as one batch and later calls hand out the other seeds, so a bench in one
    process gives exactly the numbers of the unsplit bench; a job of a split bench batches its own
    seeds, which agrees with the larger batch up to float rounding (tests/test_train.py)."""
    if seed not in _BATCH.get(cfg, {}):
        _BATCH[cfg] = run_batch(
            cfg if seed in cfg.seeds else dataclasses.replace(cfg, seeds=(seed,))
        )
    out = _BATCH[cfg].pop(seed)
    if not _BATCH[cfg]:
        del _BATCH[cfg]
    return out


def same_or_per_seed(values: list, seeds: list[int]):
    """One value when every seed has it, else {seed: value} (an evaluation run fell back to a
    smaller learning rate on some seeds only, which a split bench can show)."""
    if all(v == values[0] for v in values):
        return values[0]
    return {str(s): v for s, v in zip(seeds, values)}


def collect(per_seed: dict[int, dict]) -> tuple[dict, dict, dict]:
    """metrics {label: {prefix/metric: summary}}, curves {problem: {label: histories}} and the
    learning rate each run used {prefix: {label: lr}} (below the tuned one after a divergence),
    from the per-seed outputs in the order of per_seed (so the values pair up by seed)."""
    seeds = list(per_seed)
    acc: dict[str, dict[str, list[float]]] = {}
    curves: dict = {}
    used: dict = {}

    def add(label: str, prefix: str, rows: list[dict]) -> None:
        for key in ("worst", "average"):
            acc.setdefault(label, {})[f"{prefix}/{key}"] = [r[key] for r in rows]

    for i, run in enumerate(per_seed[seeds[0]]["runs"]):
        rows = [per_seed[s]["runs"][i] for s in seeds]
        prefix, label = run["prefix"], run["label"]
        add(label, prefix, rows)
        if run["method"] != "nsga3":
            used.setdefault(prefix, {})[label] = same_or_per_seed([r["lr"] for r in rows], seeds)
        acc[label][f"{prefix}/seconds_per_seed"] = [sum(r["seconds"] for r in rows) / len(rows)]
        if label == "STCH-Set":
            add(FLOOR, prefix, [r["untrained"] for r in rows])
            if "truth" in run and "/" not in prefix:
                add(ORACLE, prefix, [r["truth"] for r in rows])
        if run["history"]:
            curves.setdefault(prefix, {})[label] = [
                (step, [r["history"][j][1] for r in rows])
                for j, (step, _) in enumerate(run["history"])
            ]
    metrics = {lab: {key: summarize(v) for key, v in d.items()} for lab, d in acc.items()}
    return metrics, curves, used


def check_same_protocol(per_seed: dict[int, dict]) -> None:
    """Every seed ran the same evaluation runs with the same tuned learning rates (the jobs of a
    split bench tune independently; the partial files must come from the same flags)."""
    seeds = list(per_seed)
    first = per_seed[seeds[0]]
    runs = [(r["prefix"], r["label"]) for r in first["runs"]]
    for seed in seeds[1:]:
        other = per_seed[seed]
        if other["tuning"]["chosen"] != first["tuning"]["chosen"]:
            raise ValueError(
                f"seeds {seeds[0]} and {seed} were tuned to different learning rates "
                f"({first['tuning']['chosen']} vs {other['tuning']['chosen']}): partial files "
                "of different flags or code"
            )
        if [(r["prefix"], r["label"]) for r in other["runs"]] != runs:
            raise ValueError(
                f"seeds {seeds[0]} and {seed} ran different methods or problems: partial files "
                "of different flags"
            )


def init_check(cfg: Config, names: tuple[str, ...], count: int = INIT_CHECK_SEEDS) -> dict:
    """Worst case of the untrained initial solutions, ours against the official initialisation,
    over `count` seeds (no training: it tests whether the two initialisations differ in kind)."""
    out = {}
    seeds = tuple(range(count))
    for p in (p for p in names if p in OFFICIAL_INIT_PROBLEMS):
        worst = {}
        for init in ("ours", "official"):
            batch, start, _, _, _ = prepare(cfg, p, seeds, cfg.m, cfg.k, init)
            worst[init] = scores(batch, start)["worst"]
        out[p] = {
            "seeds": count,
            "ours_mean": float(np.mean(worst["ours"])),
            "official_mean": float(np.mean(worst["official"])),
            "official_vs_ours": paired(worst["official"], worst["ours"]),
        }
    return out


def finish(cfg: Config, per_seed: dict[int, dict], wall_seconds: float) -> dict:
    """Metrics over the seeds of per_seed, the claims, the speed rows, the init check and the
    figures; writes <results-dir>/<name>.json and its figures; returns the document."""
    start = time.perf_counter()
    seeds = list(per_seed)
    cfg = dataclasses.replace(cfg, seeds=tuple(seeds))
    validate(cfg)
    check_same_protocol(per_seed)
    names = problem_names(cfg)
    tuning = dict(per_seed[seeds[0]]["tuning"])
    metrics, curves, tuning["used"] = collect(per_seed)
    sweeps = sweep_points(cfg)
    claims = compute_claims(names, metrics, sweeps)
    clock = time.perf_counter()
    perf, growth = performance(cfg, names)
    phases = dict(per_seed[seeds[0]].get("phase_seconds", {}))
    phases["performance"] = time.perf_counter() - clock
    prefix = "quick_" if cfg.name == "quick" else f"{cfg.name}-"
    figures = {
        f"{prefix}worst.png": plot_worst(names, metrics),
        f"{prefix}curves.png": plot_curves(curves),
        f"{prefix}step_cost.png": plot_growth(growth),
    }
    if sweeps:
        figures[f"{prefix}worst_vs_k.png"] = plot_k_sweep(sweeps, metrics)
    clock = time.perf_counter()
    checked = init_check(cfg, names)
    phases["init_check"] = time.perf_counter() - clock
    doc = results_document(
        PAPER,
        cfg.name,
        seeds,
        metrics,
        claims,
        wall_seconds + time.perf_counter() - start,
        cfg.device,
        perf,
        paired=paired_table(names, metrics),
        init_check=checked,
        phase_seconds={key: round(value, 2) for key, value in phases.items()},
        tuning=tuning,
        config=dataclasses.asdict(cfg),
    )
    write_results(results_dir_of(cfg), cfg.name, doc, figures)
    return doc


def run_bench(cfg: Config) -> dict:
    """Run the preset (every seed, then finish); with --partial-out only this job's seeds into a
    partial file, with --merge finish over the seeds of partial files (results.drive_bench)."""
    validate(cfg)
    if "stch-set" not in cfg.methods:
        raise ValueError("the benchmark compares against STCH-Set: --methods must include stch-set")
    if cfg.device == "cpu":
        torch.set_num_threads(cfg.threads)
    return drive_bench(cfg, PAPER, run_seed, finish, progress)
