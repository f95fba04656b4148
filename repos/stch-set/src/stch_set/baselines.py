"""Comparison methods: K independent random-preference runs, and NSGA-III followed by choosing K.

The preference baselines follow the official scripts: each solution k has its own Dirichlet(1)
preference lambda^(k) over the m objectives and the K single-solution losses are summed (the K
runs share no parameter, so the sum trains them independently).
"""

from __future__ import annotations

import numpy as np
import torch

from .data import Params, Problem
from .scalarization import check_mu, check_objectives, logsumexp


def random_preferences(k: int, m: int, seed: int) -> torch.Tensor:
    """(K, m) Dirichlet(1, ..., 1) preferences, one row per solution."""
    return torch.from_numpy(np.random.default_rng(seed).dirichlet(np.ones(m), size=k)).float()


def _check_pref_matrix(values: torch.Tensor, prefs: torch.Tensor) -> None:
    check_objectives(values)
    if prefs.shape[-2:] != values.shape[-2:]:
        raise ValueError(
            f"preferences must be K x m = {tuple(values.shape[-2:])}, got {tuple(prefs.shape)}"
        )
    if (prefs < 0).any():
        raise ValueError("preference weights must be >= 0")


def stch_preference(values: torch.Tensor, prefs: torch.Tensor, mu: float) -> torch.Tensor:
    """Sum over k of single-solution STCH: mu log sum_i exp(lambda_ki f_i(x^(k)) / mu)."""
    check_mu(mu)
    _check_pref_matrix(values, prefs)
    return (mu * logsumexp(prefs * values / mu, dim=-1)).sum(dim=-1)


def tch_preference(values: torch.Tensor, prefs: torch.Tensor) -> torch.Tensor:
    """Sum over k of single-solution Tchebycheff: max_i lambda_ki f_i(x^(k))."""
    _check_pref_matrix(values, prefs)
    return (prefs * values).amax(dim=-1).sum(dim=-1)


def linear_preference(values: torch.Tensor, prefs: torch.Tensor) -> torch.Tensor:
    """Sum over k of linear scalarization: sum_i lambda_ki f_i(x^(k))."""
    _check_pref_matrix(values, prefs)
    return (prefs * values).sum(dim=(-2, -1))


def greedy_select(values: torch.Tensor, k: int) -> list[int]:
    """Choose k rows of a (P, m) objective matrix, each time adding the row that most lowers
    max_i min_{chosen} f_i (greedy for the worst-case metric)."""
    chosen: list[int] = []
    best = torch.full((values.shape[1],), float("inf"), dtype=values.dtype)
    for _ in range(min(k, values.shape[0])):
        scores = torch.minimum(best, values).amax(dim=1)
        if chosen:
            scores[chosen] = float("inf")
        pick = int(scores.argmin())
        chosen.append(pick)
        best = torch.minimum(best, values[pick])
    return chosen


def _flatten(params: Params) -> torch.Tensor:
    return torch.cat([p.reshape(p.shape[0], -1) for p in params], dim=1)


def _unflatten(flat: torch.Tensor, like: Params) -> Params:
    out, start = [], 0
    for p in like:
        size = p[0].numel()
        out.append(flat[:, start : start + size].reshape(flat.shape[0], *p.shape[1:]))
        start += size
    return out


def nsga3_select(
    problem: Problem, k: int, seed: int, pop_size: int, generations: int, bound: float
) -> Params:
    """pymoo NSGA-III on all m objectives (a box [-bound, bound] per parameter), then greedy
    choice of k solutions from the final population for the worst-case metric."""
    from pymoo.algorithms.moo.nsga3 import NSGA3
    from pymoo.core.problem import Problem as PymooProblem
    from pymoo.optimize import minimize

    like = problem.init_solutions(1, torch.Generator().manual_seed(seed))
    n_var = _flatten(like).shape[1]

    def objectives(x: np.ndarray) -> torch.Tensor:
        flat = torch.as_tensor(x, dtype=like[0].dtype, device=like[0].device)
        with torch.no_grad():
            return problem.evaluate(_unflatten(flat, like)).cpu()

    class Wrapped(PymooProblem):
        def __init__(self) -> None:
            super().__init__(n_var=n_var, n_obj=problem.m, xl=-bound, xu=bound)

        def _evaluate(self, x, out, *args, **kwargs):
            out["F"] = objectives(x).double().numpy()

    ref_dirs = np.random.default_rng(seed).dirichlet(np.ones(problem.m), size=pop_size)
    res = minimize(
        Wrapped(), NSGA3(ref_dirs=ref_dirs, pop_size=pop_size), ("n_gen", generations), seed=seed
    )
    pop = np.atleast_2d(res.pop.get("X"))
    pick = greedy_select(objectives(pop), k)
    flat = torch.as_tensor(pop[pick], dtype=like[0].dtype, device=like[0].device)
    return _unflatten(flat, like)
