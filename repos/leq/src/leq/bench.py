"""Quick benchmark: every method over the preset's seeds, claims computed from the metrics,
update-speed figures, results JSON and figures."""

from __future__ import annotations

import dataclasses
import functools
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
from tqdm import tqdm

from . import agents, baselines, workers
from .config import DATA_VARIANTS, Config, validate
from .results import (
    claim,
    paired_interval,
    part_from_paired,
    results_document,
    summarize,
    write_results,
)
from .runtime import results_dir_of
from .train import (
    as_arrays,
    fit_world_model,
    init_params,
    iql_hp,
    iql_steps,
    load_data,
    make_hp,
    train_and_evaluate,
)

PAPER = "leq"
GAP_OVER_ONESTEP = 20.0  # points: LEQ success minus the one-step model-based baseline's
IQL_SLACK = 10.0  # points: LEQ success may trail IQL by at most this much
# The paper's AntMaze rows per layout (LEQ vs MOPO/MOBILE, LEQ vs IQL); medium: medium-diverse,
# where the paper's LEQ trails IQL by 23.8 points, so the IQL gate is not checked there.
PAPER_ROWS = {
    "umaze": ("antmaze-umaze LEQ 94.4 vs MOPO/MOBILE 0.0; AntMaze total LEQ 470.4 vs 0",
              "antmaze-umaze LEQ 94.4 vs IQL 87.5; AntMaze total 470.4 vs 378.0"),
    "medium": ("antmaze-medium-diverse LEQ 46.2 vs MOPO/MOBILE 0.0; AntMaze total LEQ 470.4 vs 0",
               None),
}  # fmt: skip
FLOOR_MARGIN = 0.0  # points: a method must score above LEQ's BC-initialised actor (the floor)


# Per-run diagnostics (leq.diagnostics, leq.train) summarised over seeds in the results file.
WORLD_MODEL = (
    "data_blocked_fraction", "model_holdout_err", "model_err_free", "model_err_blocked",
    "data_wall_contact_fraction", "model_err_nocontact", "model_err_contact",
)  # fmt: skip
DIAGNOSTICS = WORLD_MODEL + (
    "imagined_wall_frac_start", "imagined_goal_rate_start", "imagined_steps_start",
    "bc_success_rate", "final_q_model",
)  # fmt: skip
FLOOR = "bc_success_rate"  # LEQ's actor after BC, before any LEQ update: the negative control


def gap_parts(a: list[float], b: list[float], kind: str, name_a: str, name_b: str) -> list[dict]:
    """The structured test of a maze claim on paired per-seed success rates a (LEQ) and b.

    kind "beats": the 95 % paired t interval of a - b lies above GAP_OVER_ONESTEP points
    (contradicted when it lies below). kind "not-worse": the interval of a - b lies above
    -IQL_SLACK (non-inferiority); that claim is read only under its precondition, the BC-floor
    claim (`floor_parts`), so that a verdict is not read when both methods fail together. With
    fewer than 3 seeds nothing holds (results.verdict)."""
    if kind == "beats":
        what = f"{name_a} - {name_b} success rate (points)"
        return [part_from_paired(what, paired_interval(a, b), GAP_OVER_ONESTEP, ">", "points")]
    what = f"{name_a} - {name_b} success rate (points), non-inferiority margin"
    return [part_from_paired(what, paired_interval(a, b), -IQL_SLACK, ">", "points")]


def floor_parts(methods: dict[str, list[float]], floor: list[float]) -> list[dict]:
    """The precondition of a non-inferiority claim: every compared method's per-seed success
    rate minus the BC floor's (LEQ's actor before any LEQ update, same seed) has its 95 % paired
    interval above FLOOR_MARGIN points; one part per method."""
    out = []
    for name, v in methods.items():
        what = f"{name} - BC floor success rate (points; floor: LEQ's actor before LEQ updates)"
        out.append(part_from_paired(what, paired_interval(v, floor), FLOOR_MARGIN, ">", "points"))
    return out


def _fmt(p: dict) -> str:
    lo, hi = p["interval"]
    ci = "" if lo is None else f", 95% CI [{lo:.1f}, {hi:.1f}]"
    return f"{p['estimate']:.1f}{ci}"


def maze_claims(cfg: Config, runs: dict, vals: dict[str, list[float]], env: str) -> list[dict]:
    """The maze gates of task `env` as structured claims (three-way verdict), the world model's
    error beside each, and each gate's negative control as its own claim (role "control"):
    the same check with the BC-initialised actor in LEQ's place, which must not hold. Claim
    ids of tasks other than cfg.env are prefixed with the task."""
    out = []
    layout = env.removeprefix("pm-")
    beats_paper, iql_paper = PAPER_ROWS.get(layout, PAPER_ROWS["umaze"])
    beats = (
        f"{env}: LEQ's success rate is more than {GAP_OVER_ONESTEP:.0f} points above the "
        "one-step model-based baseline's (tau 0.5, beta 0.95): the 95% paired interval over "
        f"seeds lies above {GAP_OVER_ONESTEP:.0f}"
    )
    not_worse = (
        f"{env}: LEQ's success rate is at least IQL's minus {IQL_SLACK:.0f} points (the 95% "
        "paired interval lies above the margin); read only where LEQ and IQL both clear the BC "
        "floor (its precondition claim)"
    )
    gates = [
        ("leq-beats-onestep-mb", "MB-onestep", "beats", beats, beats_paper),
        ("leq-at-least-iql-minus-10", "IQL", "not-worse", not_worse, iql_paper),
    ]
    mean = lambda v: sum(v) / len(v)
    for cid, other, kind, statement, paper in gates:
        if "LEQ" not in vals or other not in vals or paper is None:
            continue
        cid = cid if env == cfg.env else f"{env}-{cid}"
        leq_runs = [runs[(env, "LEQ", s)] for s in cfg.seeds]
        floor = [r[FLOOR] for r in leq_runs] if FLOOR in leq_runs[0] else None
        extra = {}
        if kind == "not-worse" and floor is not None:
            # the precondition, a claim of its own: every compared method clears the BC floor
            fid = f"{cid}-precondition-clear-bc-floor"
            compared = {"LEQ": vals["LEQ"], other: vals[other]}
            pre = floor_parts(compared, floor)
            out.append(
                claim(
                    fid,
                    f"{env}: every compared method ({', '.join(compared)}) clears the BC floor "
                    "(LEQ's actor after BC, before any LEQ update): each paired 95% interval "
                    f"of method - floor over seeds lies above {FLOOR_MARGIN:.0f} points; "
                    f"{cid} is read only where this holds",
                    "the paper's AntMaze scores are far above behaviour cloning (antmaze-umaze "
                    "BC 54.6 in the IQL paper's table vs LEQ 94.4, IQL 87.5)",
                    "; ".join(f"{p['what'].split(' success')[0]} {_fmt(p)}" for p in pre),
                    test=pre,
                    updates=budgets(cfg, ("LEQ", other)),
                )
            )
            extra["precondition"] = fid
        test = gap_parts(vals["LEQ"], vals[other], kind, "LEQ", other)
        ours = f"{mean(vals['LEQ']):.1f} vs {mean(vals[other]):.1f}; " + "; ".join(
            f"{p['what'].split(' success')[0]} {_fmt(p)}" for p in test
        )
        c = claim(cid, statement, paper, ours, test=test, **extra)
        c["updates"] = budgets(cfg, ("LEQ", other))
        c["world_model"] = {
            k: mean([r[k] for r in leq_runs]) for k in WORLD_MODEL if k in leq_runs[0]
        }
        out.append(c)
        if floor is None:
            continue
        ctl = gap_parts(floor, vals[other], kind, "BC floor", other)
        out.append(
            claim(
                f"{cid}-control-bc-floor",
                f"negative control of {cid} (must not hold): the same check with LEQ's actor "
                "after BC, before any LEQ update, in LEQ's place",
                "-",
                f"{mean(floor):.1f} vs {mean(vals[other]):.1f}; diff {_fmt(ctl[0])}",
                test=ctl,
                role="control",
            )
        )
    return out


def budgets(cfg: Config, methods) -> dict:
    """Gradient updates each method of a claim was trained for (IQL: cfg.iql_steps if set)."""
    out = {m: iql_steps(cfg) if m == "IQL" else cfg.steps for m in methods}
    out["bc_steps_of_the_floor"] = cfg.bc_steps
    out["note"] = (
        "one setting per method, no tuning grid; the paper trains every method 1e6 updates. IQL "
        "on PointMaze UMaze seed 0 scores 30 / 60 / 95 % after 12k / 20k / 60k updates (README)"
    )
    return out


# Relative cost of one training run (a LEQ-style run = 1), for the order of the schedule.
RUN_COST = {"IQL": 0.1, "MB-onestep": 0.8}
PERF = ("perf", "", "", -1)  # the speed measurement, run as one job of the schedule


def compile_group(env: str, method: str) -> tuple:
    """Runs in one group share their compiled update function (LEQ and LEQ-tau0.5 differ only
    in the traced tau)."""
    method = DATA_VARIANTS.get(method, (method,))[0]
    return (env, "IQL") if method == "IQL" else (env, *baselines.VARIANTS[method][2:])


def schedule(cfg: Config) -> list[tuple[str, str, str, int]]:
    """Jobs (kind, env, method, seed) in the order the workers take them.

    First the speed measurement (it compiles the maze LEQ and IQL updates), then one run of
    every other compile group, so that the workers start on different functions and load the
    rest from the shared compilation cache; then the remaining runs, longest first, so that no
    worker idles at the end. The order does not change any number (each run is deterministic).
    """
    runs = list(dict.fromkeys((env, m, s) for env, ms in tasks(cfg) for m in ms for s in cfg.seeds))
    cost = lambda r: -RUN_COST.get(r[1], 1.0)
    done = {compile_group(cfg.env, "LEQ"), compile_group(cfg.env, "IQL")}
    first = []
    for r in runs:
        if compile_group(r[0], r[1]) not in done:
            done.add(compile_group(r[0], r[1]))
            first.append(r)
    rest = sorted((r for r in runs if r not in first), key=cost)
    return [PERF] + [("train", *r) for r in sorted(first, key=cost) + rest]


def tasks(cfg: Config) -> list[tuple[str, tuple[str, ...]]]:
    out = [(env, tuple(cfg.methods)) for env in (cfg.env, *cfg.extra_envs)]
    return out + [(cfg.dense_env, tuple(cfg.dense_methods))] if cfg.dense_env else out


def run_job(cfg: Config, job: tuple[str, str, str, int]):
    """One job of the schedule: the speed figures, or train_and_evaluate of one run."""
    kind, env, method, seed = job
    if kind == "perf":
        return performance(cfg)
    run_cfg = dataclasses.replace(cfg, seed=seed, env=env, quiet=cfg.quiet or cfg.workers > 1)
    return train_and_evaluate(run_cfg, Path(cfg.out) / env / method / f"seed{seed}", which=method)


def run_schedule(cfg: Config) -> tuple[list[dict], dict[tuple[str, str, int], dict]]:
    """Every job of `schedule(cfg)` on cfg.workers processes; returns (perf, metrics per run)."""
    jobs = schedule(cfg)
    bar = tqdm(total=len(jobs), desc="bench", disable=cfg.quiet or not sys.stderr.isatty())

    def done(job, result):
        bar.update(1)
        if job[0] == "train":
            bar.set_postfix_str(f"{job[1]} {job[2]} seed {job[3]} done")

    with bar, tempfile.TemporaryDirectory(prefix="leq-bench-") as scratch:
        out = workers.run_all(functools.partial(run_job, cfg), jobs, cfg.workers, scratch, done)
    return out[0], {job[1:]: res for job, res in zip(jobs[1:], out[1:])}


def values_of(cfg: Config, runs: dict, env: str, methods, metric: str) -> dict[str, list[float]]:
    missing = [k for k in runs if k[0] == env and metric not in runs[k]]
    if missing:  # e.g. a --dataset-path of other dimensions than the env's: nothing evaluated
        raise ValueError(
            f"{env}: run {missing[0][1]} seed {missing[0][2]} has no {metric} (its data "
            f"{cfg.dataset_path} {cfg.dataset_id} does not fit the env, so it is not evaluated)"
        )
    return {m: [runs[(env, m, s)][metric] for s in cfg.seeds] for m in methods}


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    jax.block_until_ready(jax.tree_util.tree_leaves(fn(*args)))
    return time.perf_counter() - start


def performance(cfg: Config) -> list[dict]:
    """Compile time and gradient updates per second after compilation (LEQ and IQL, maze).

    The first job of the schedule: its worker has compiled nothing yet, so the first call of a
    `perf_steps`-update chunk includes its compilation: compile_s = first call - second call.
    With 2 workers the other worker is training meanwhile (one core each). The arguments have
    the training shapes (padded dataset, full expansion buffer), so with perf_steps ==
    rollout_every the training runs reuse this compilation instead of paying for another one.
    """
    run_cfg = dataclasses.replace(cfg, seed=cfg.seeds[0])
    ds = load_data(run_cfg)
    d = as_arrays(run_cfg, ds)
    actor_p, critic_p, value_p = init_params(run_cfg, ds, jax.random.PRNGKey(0))
    n, key = cfg.perf_steps, jax.random.PRNGKey(1)
    wm = fit_world_model(run_cfg, ds)
    hp = make_hp(run_cfg, "LEQ", ds.observations.shape[1], ds.actions.shape[1])
    st = agents.init_state(hp, key, actor_p, critic_p)
    rows = cfg.rollout_retain * cfg.rollout_states * cfg.rollout_len
    obs = d["observations"][jnp.arange(rows) % d["size"]]
    args = (st, wm, d, obs, jnp.asarray(rows, jnp.int32), key, jnp.float32(cfg.tau), jnp.float32(cfg.beta))  # fmt: skip
    fn = agents.update_chunk(hp, n)
    timings = [("LEQ", _timed(fn, *args), _timed(fn, *args))]
    ihp = iql_hp(run_cfg, ds.actions.shape[1])
    ist = baselines.iql_init(ihp, actor_p, critic_p, value_p)
    fn = baselines.iql_chunk(ihp, n)
    timings.append(("IQL", _timed(fn, ist, d, key), _timed(fn, ist, d, key)))
    threads = 1 if cfg.workers > 1 else cfg.threads
    beside = f" in this worker, beside {cfg.workers - 1} other training worker(s)"
    beside = beside if cfg.workers > 1 else ""
    return [
        {
            "id": f"{name.lower()}-updates-per-s",
            "what": f"{name} gradient updates per second after compilation ({cfg.env}, batch "
            f"{cfg.batch}, H {cfg.horizon}, {n} updates in one jitted lax.scan, {threads} CPU thread); "
            f"compile_s = first call - second call, measured before any training{beside}",
            "ours_updates_per_s": round(n / again, 1),
            "compile_s": round(max(first - again, 0.0), 2),
            "ours_s": round(again / n, 5),
        }
        for name, first, again in timings
    ]


def make_figures(cfg: Config, maze_vals: dict, dense_vals: dict, perf: list[dict]) -> dict:
    """Scores (one panel per task) and update speed: file name -> figure, for
    <results_dir>/figures; the quick preset keeps the names scores.png / updates_per_s.png, other
    presets prefix theirs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    prefix = "" if cfg.name == "quick" else f"{cfg.name}_"
    panels = [(f"{env} ({cfg.dataset}) success rate %", v) for env, v in maze_vals.items()]
    if dense_vals:
        panels.append((f"{cfg.dense_env} normalised return", dense_vals))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.6), squeeze=False)
    for ax, (title, vals) in zip(axes[0], panels):
        names = list(vals)
        means = [sum(v) / len(v) for v in vals.values()]
        ax.bar(names, means, color="tab:blue", alpha=0.6)
        for i, v in enumerate(vals.values()):
            ax.scatter([i] * len(v), v, color="k", s=12, zorder=3)
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=30)
    figures = {f"{prefix}scores.png": fig}
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    ax.bar([p["id"].split("-")[0] for p in perf], [p["ours_updates_per_s"] for p in perf])
    ax.set_ylabel("updates / s (after compile)")
    figures[f"{prefix}updates_per_s.png"] = fig
    return figures


def run_bench(cfg: Config) -> dict:
    validate(cfg)
    start = time.perf_counter()
    perf, runs = run_schedule(cfg)
    mazes = (cfg.env, *cfg.extra_envs)
    maze_vals = {env: values_of(cfg, runs, env, cfg.methods, "success_rate") for env in mazes}
    dense_vals = {}
    if cfg.dense_env:
        dense_vals = values_of(cfg, runs, cfg.dense_env, cfg.dense_methods, "normalized_return")
    metrics: dict[str, dict] = {}
    for env, env_vals in maze_vals.items():
        for name, v in env_vals.items():
            metrics.setdefault(name, {})[f"{env}_success_rate"] = summarize(v)
    for name, v in dense_vals.items():
        metrics.setdefault(name, {})[f"{cfg.dense_env}_normalized_return"] = summarize(v)
    claims = [c for env in mazes for c in maze_claims(cfg, runs, maze_vals[env], env)]
    for env in mazes:
        for name in maze_vals[env]:
            for key in DIAGNOSTICS:
                vals = [runs[(env, name, s)].get(key) for s in cfg.seeds]
                if all(v is not None for v in vals):
                    metrics[name][f"{env}_{key}"] = summarize(vals)
    doc = results_document(
        PAPER, cfg.name, list(cfg.seeds), metrics, claims, time.perf_counter() - start,
        cfg.device, perf,
    )  # fmt: skip
    figures = make_figures(cfg, maze_vals, dense_vals, perf)
    write_results(results_dir_of(cfg), cfg.name, doc, figures)
    return doc
