"""train_and_evaluate(cfg, workdir) -> metrics: one method on one problem for one seed."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import schedulefree
import torch
from tqdm import tqdm

from . import baselines
from .config import Config, validate
from .data import NetworkProblem, Params, Problem, make_problem, sizes
from .results import atomic_write_json
from .scalarization import average_case, stch_set, sum_of_minimum, tch_set, worst_case

INIT_SEED_OFFSET = 10_000  # solutions are initialised from seed + offset, data from seed


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
    """The scalar each gradient method minimises, from the K x m objective matrix."""
    if method == "stch-set":
        return stch_set(values, mu)
    if method == "tch-set":
        return tch_set(values)
    if method == "som":
        return sum_of_minimum(values)
    if method == "stch":
        return baselines.stch_preference(values, prefs, cfg.pref_mu)
    if method == "tch":
        return baselines.tch_preference(values, prefs)
    if method == "ls":
        return baselines.linear_preference(values, prefs)
    raise ValueError(f"{method!r} is not a gradient method")


def optimize(
    problem: Problem,
    method: str,
    cfg: Config,
    k: int,
    seed: int,
    evaluate: Callable[[Params], torch.Tensor] | None = None,
    check_every: int = 0,
    stop_below: float = -math.inf,
) -> tuple[Params, list[tuple[int, float]]]:
    """Run `cfg.steps` steps of `method`; return the (averaged) solutions and the worst-case
    history [(step, worst)] recorded every `check_every` steps (0: never).

    `evaluate` replaces problem.evaluate inside the loop (the speed references); training stops
    early once the recorded worst case is <= stop_below.
    """
    if method == "nsga3":
        sols = baselines.nsga3_select(
            problem, k, seed, cfg.nsga_pop, cfg.nsga_generations, cfg.nsga_bound
        )
        return sols, []
    evaluate = evaluate or problem.evaluate
    network = isinstance(problem, NetworkProblem)
    params = [
        p.requires_grad_()
        for p in problem.init_solutions(k, torch.Generator().manual_seed(seed + INIT_SEED_OFFSET))
    ]
    prefs = baselines.random_preferences(k, problem.m, seed).to(problem.a)
    opt = make_optimizer(params, cfg, network)
    if hasattr(opt, "train"):
        opt.train()
    history: list[tuple[int, float]] = []
    quiet = cfg.quiet or not sys.stderr.isatty()
    bar = tqdm(range(cfg.steps), desc=method, disable=quiet, leave=False)
    for step in bar:
        loss = set_loss(method, evaluate(params), smoothing(cfg, network, step), prefs, cfg)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if check_every and (step + 1) % check_every == 0:
            with averaged_weights(opt), torch.no_grad():
                history.append((step + 1, worst_case(problem.evaluate(params))))
            bar.set_postfix(loss=f"{loss.item():.4g}", worst=f"{history[-1][1]:.4g}")
            if history[-1][1] <= stop_below:
                break
    with averaged_weights(opt):
        final = [p.detach().clone() for p in params]
    return final, history


def run(
    cfg: Config, problem: Problem, method: str, seed: int, k: int, check_every: int = 0
) -> tuple[dict[str, float], list[tuple[int, float]]]:
    """Optimise K solutions, then measure worst/average case and wall time."""
    start = time.perf_counter()
    sols, history = optimize(problem, method, cfg, k, seed, check_every=check_every)
    seconds = time.perf_counter() - start
    with torch.no_grad():
        values = problem.evaluate(sols)
    metrics = {"worst": worst_case(values), "average": average_case(values), "seconds": seconds}
    return metrics, history


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Train cfg.method on cfg.problem for cfg.seed; writes workdir/config.json first, then
    workdir/metrics.json (worst, average, seconds)."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    problem = make_problem(cfg.problem, cfg.seed, cfg.m, cfg.k, cfg.n_dim, cfg.device)
    metrics, _ = run(cfg, problem, cfg.method, cfg.seed, sizes(cfg.problem, cfg.m, cfg.k)[1])
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
