"""train_and_evaluate(cfg, workdir) -> metrics, evaluate(cfg, workdir) (reloads the saved
solutions), and the seed-batched optimisation loop.

Several seeds of one method train as one tensor program: the solutions of every seed are stacked
on a leading axis and the loss is the sum of the per-seed losses, so each seed's gradient is its
own (the seeds share no parameter, and both schedule-free optimisers update elementwise with
scalar schedules). tests/test_train.py checks that a batch of seeds equals the seeds run alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import schedulefree
import torch
from safetensors.torch import save as safetensors_bytes
from tqdm import tqdm

from . import baselines
from .config import Config, validate
from .data import (
    USER,
    USER_K,
    NetworkProblem,
    Params,
    Problem,
    load_csv_problem,
    load_entry_problem,
    make_problem,
    official_init,
    sizes,
    stack,
    to_device,
)
from .results import atomic_write_bytes, atomic_write_json, load_safetensors, read_json
from .scalarization import average_case, stch_set, sum_of_minimum, tch_set, worst_case

INIT_SEED_OFFSET = 10_000  # our initial solutions come from seed + offset, the data from seed
SOLUTIONS = "solutions.safetensors"
"""The trained solution set of a `train` run: tensors param0, param1, ... of one seed."""
RUN_FIELDS = ("seed", "problem", "problem_file", "problem_entry", "m", "k", "n_dim", "method")
"""Fields of a run's config.json that `eval` needs to rebuild its problem."""


def problem_names(cfg: Config) -> tuple[str, ...]:
    """Problems the benchmark runs: the user problem alone when one is given."""
    return (USER,) if cfg.problem_file or cfg.problem_entry else cfg.problems


def build_problem(cfg: Config, name: str, seed: int, m: int | None, k: int | None) -> Problem:
    if name != USER:
        return make_problem(name, seed, m, k, cfg.n_dim, cfg.device)
    if cfg.problem_file:
        return to_device(load_csv_problem(cfg.problem_file), cfg.device)
    return load_entry_problem(cfg.problem_entry, cfg.n_dim)


def solution_count(name: str, m: int | None, k: int | None) -> int:
    return (USER_K if k is None else k) if name == USER else sizes(name, m, k)[1]


def initial_solutions(
    problem: Problem, name: str, seed: int, k: int, init: str, n_dim: int
) -> Params:
    """K initial solutions of one seed: ours (a generator seeded seed + offset) or official."""
    if init == "official":
        sols = official_init(name, seed, problem.m, k, n_dim)
        return [s.to(problem.a) for s in sols]
    return problem.init_solutions(k, torch.Generator().manual_seed(seed + INIT_SEED_OFFSET))


def make_optimizer(params: Params, cfg: Config, network: bool) -> torch.optim.Optimizer:
    """Official choice: schedule-free SGD for solution vectors, schedule-free AdamW for networks."""
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr)
    opt_cls = schedulefree.AdamWScheduleFree if network else schedulefree.SGDScheduleFree
    return opt_cls(params, lr=cfg.lr, warmup_steps=cfg.warmup_steps)


@contextlib.contextmanager
def averaged_weights(opt: torch.optim.Optimizer) -> Iterator[None]:
    """Schedule-free optimisers train at an interpolated point y and must swap in the averaged
    weights x (optimizer.eval()) before evaluation, then swap back (optimizer.train())."""
    swap = hasattr(opt, "eval") and hasattr(opt, "train")
    if swap:
        opt.eval()
    try:
        yield
    finally:
        if swap:
            opt.train()


def smoothing(cfg: Config, network: bool, step: int) -> float:
    """mu for this step: constant, or exp(-mu_anneal t) on network problems (official nonlinear)."""
    return math.exp(-cfg.mu_anneal * step) if network and cfg.mu_anneal > 0 else cfg.mu


def set_loss(
    method: str, values: torch.Tensor, mu: float, prefs: torch.Tensor, cfg: Config
) -> torch.Tensor:
    """The scalar each gradient method minimises: the sum over seeds of its per-seed loss."""
    if method == "stch-set":
        return stch_set(values, mu).sum()
    if method == "tch-set":
        return tch_set(values).sum()
    if method == "som":
        return sum_of_minimum(values).sum()
    if method == "stch":
        return baselines.stch_preference(values, prefs, cfg.pref_mu).sum()
    if method == "tch":
        return baselines.tch_preference(values, prefs).sum()
    if method == "ls":
        return baselines.linear_preference(values, prefs).sum()
    raise ValueError(f"{method!r} is not a gradient method")


def optimize(
    problem: Problem,
    method: str,
    cfg: Config,
    start: Params,
    prefs: torch.Tensor,
    evaluate: Callable[[Params], torch.Tensor] | None = None,
    check_every: int = 0,
    stop_below: float = -math.inf,
) -> tuple[Params, list[tuple[int, list[float]]]]:
    """Run `cfg.steps` steps of a gradient method from the (seed-stacked) solutions `start`;
    return the averaged solutions and the history [(step, worst case per seed)] recorded every
    `check_every` steps (0: never). Training stops early once every seed's worst case is
    <= stop_below; `evaluate` replaces problem.evaluate inside the loop.
    """
    evaluate = evaluate or problem.evaluate
    network = isinstance(problem, NetworkProblem)
    params = [p.detach().clone().requires_grad_() for p in start]
    opt = make_optimizer(params, cfg, network)
    if hasattr(opt, "train"):
        opt.train()
    history: list[tuple[int, list[float]]] = []
    quiet = cfg.quiet or not sys.stderr.isatty()
    bar = tqdm(range(cfg.steps), desc=method, disable=quiet, leave=False)
    for step in bar:
        loss = set_loss(method, evaluate(params), smoothing(cfg, network, step), prefs, cfg)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if check_every and (step + 1) % check_every == 0:
            with averaged_weights(opt), torch.no_grad():
                worst = worst_case(problem.evaluate(params)).reshape(-1).tolist()
            history.append((step + 1, worst))
            bar.set_postfix(loss=f"{loss.item():.4g}", worst=f"{max(worst):.4g}")
            if max(worst) <= stop_below:
                break
    with averaged_weights(opt):
        final = [p.detach().clone() for p in params]
    return final, history


def scores(problem: Problem, params: Params) -> dict[str, list[float]]:
    """Worst and average case of each seed's solution set."""
    with torch.no_grad():
        values = problem.evaluate(params)
    return {
        "worst": worst_case(values).reshape(-1).tolist(),
        "average": average_case(values).reshape(-1).tolist(),
    }


def prepare(
    cfg: Config, name: str, seeds: tuple[int, ...], m: int | None, k: int | None, init: str
) -> tuple[Problem, Params, torch.Tensor, list[Problem], list[Params]]:
    """Seed-stacked problem, initial solutions and preferences, plus the per-seed pieces."""
    k = solution_count(name, m, k)
    problems = [build_problem(cfg, name, s, m, k) for s in seeds]
    starts = [initial_solutions(p, name, s, k, init, cfg.n_dim) for p, s in zip(problems, seeds)]
    prefs = torch.stack([baselines.random_preferences(k, problems[0].m, s) for s in seeds]).to(
        starts[0][0]
    )
    batch_start = [torch.stack(ps) for ps in zip(*starts)]
    return stack(problems), batch_start, prefs, problems, starts


def run_seeds(
    cfg: Config,
    name: str,
    method: str,
    seeds: tuple[int, ...],
    m: int | None = None,
    k: int | None = None,
    init: str = "ours",
    check_every: int = 0,
) -> dict:
    """One method on several seeds: per-seed worst/average, the wall seconds of the whole batch,
    the history, the final (seed-stacked) solutions, and the same scores of the initial solutions
    (the untrained floor)."""
    batch, start, prefs, problems, starts = prepare(cfg, name, seeds, m, k, init)
    clock = time.perf_counter()
    if method == "nsga3":
        sols = [
            baselines.nsga3_select(
                p, start_p[0].shape[0], s, cfg.nsga_pop, cfg.nsga_generations, cfg.nsga_bound
            )
            for p, start_p, s in zip(problems, starts, seeds)
        ]
        final, history = [torch.stack(ps) for ps in zip(*sols)], []
    else:
        final, history = optimize(batch, method, cfg, start, prefs, check_every=check_every)
    seconds = time.perf_counter() - clock
    out = {**scores(batch, final), "seconds": seconds, "history": history, "solutions": final}
    out["untrained"] = scores(batch, start)
    if batch.truth is not None:
        out["truth"] = scores(batch, batch.truth)
    return out


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Train cfg.method on cfg.problem (or the user problem) for cfg.seed; writes
    workdir/config.json first, then the solutions (safetensors) and workdir/metrics.json (worst,
    average, seconds)."""
    validate(cfg)
    if cfg.device == "cpu":
        torch.set_num_threads(cfg.threads)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    name = problem_names(dataclasses.replace(cfg, problems=(cfg.problem,)))[0]
    result = run_seeds(cfg, name, cfg.method, (cfg.seed,), cfg.m, cfg.k, cfg.init)
    tensors = {
        f"param{i}": p[0].detach().cpu().contiguous() for i, p in enumerate(result["solutions"])
    }
    atomic_write_bytes(workdir / SOLUTIONS, safetensors_bytes(tensors))
    metrics = {
        "worst": result["worst"][0],
        "average": result["average"][0],
        "seconds": result["seconds"],
    }
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Load the solutions a previous `train` saved in workdir, rebuild their problem from the
    run's config.json (the same seed gives the same instance) and score them again."""
    workdir = Path(workdir)
    config_path = workdir / "config.json"
    saved = read_json(config_path, "run config")
    missing = [k for k in RUN_FIELDS if not isinstance(saved, dict) or k not in saved]
    if missing:
        raise ValueError(f"{config_path}: not a config written by train (lacks {missing[0]})")
    run_cfg = dataclasses.replace(cfg, **{k: saved[k] for k in RUN_FIELDS})
    try:
        validate(run_cfg)
    except TypeError as exc:
        raise ValueError(f"{config_path}: a field has the wrong type ({exc})") from None
    if run_cfg.device == "cpu":
        torch.set_num_threads(run_cfg.threads)
    name = problem_names(dataclasses.replace(run_cfg, problems=(run_cfg.problem,)))[0]
    batch, start, _, _, _ = prepare(run_cfg, name, (run_cfg.seed,), run_cfg.m, run_cfg.k, "ours")
    path = workdir / SOLUTIONS
    tensors = load_safetensors(path)
    expected = [tuple(p.shape[1:]) for p in start]
    found = [
        tuple(tensors[f"param{i}"].shape) if f"param{i}" in tensors else None
        for i in range(len(start))
    ]
    if found != expected or len(tensors) != len(start):
        raise ValueError(
            f"{path}: solutions do not fit the run's problem (shapes {found}, expected {expected})"
        )
    params = [tensors[f"param{i}"].unsqueeze(0).to(start[i]) for i in range(len(start))]
    result = scores(batch, params)
    return {"worst": result["worst"][0], "average": result["average"][0]}
