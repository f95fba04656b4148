"""A port of the official training step (Xi-L/STCH-Set: run_*.py and problem.py), written anew.

Two uses only: the speed peer of perf.py, and tests that our instances and `data.official_init`
replay the official RNG stream bit for bit. It keeps the official behaviour that we do not: each
`evaluate` re-seeds the global torch RNG and rebuilds the data before its one matrix product, the
solutions live in an nn.Module drawn from the global RNG, and the losses are the scripts' inline
torch.logsumexp expressions. It does reset the global RNG (as the official code does); nothing
else in this package draws from it.
"""

from __future__ import annotations

import math
import time

import numpy as np
import schedulefree
import torch

from .data import OFFICIAL_RUNS, SPECS


class OfficialProblem:
    """problem.py's Quadratic_Func / Mixed_Linear_Regression / Mixed_Nonlinear_Regression."""

    def __init__(self, name: str, n_dim: int, m: int, k: int, seed: int) -> None:
        if name not in ("quadratic", "linear", "nonlinear"):
            raise ValueError(f"the official code has no problem {name!r}")
        self.name, self.n_dim, self.m, self.k, self.seed = name, n_dim, m, k, seed
        self.sigma, self.hidden = SPECS[name].sigma, SPECS[name].hidden
        if name == "linear":
            torch.randn(k, n_dim)  # Mixed_Linear_Regression.__init__ draws (and discards) centres

    def data(self) -> dict[str, torch.Tensor]:
        """Re-seed the global RNG and draw the instance, as every official evaluate call does."""
        torch.manual_seed(self.seed)
        m, n, k, h = self.m, self.n_dim, self.k, self.hidden
        reps = m // k + 1
        if self.name == "quadratic":
            return {"A": 2 * torch.rand(m, n) - 1, "b": 4 * torch.rand(m, 1) - 2}
        if self.name == "linear":
            centres = 4 * torch.rand(k, n) - 2
            a = 2 * torch.rand(m, n) - 1
            b = torch.sum(a * centres.repeat(reps, 1)[:m], dim=1) + self.sigma * torch.randn(m)
            return {"A": a, "b": b[:, None], "centres": centres}
        w, p, q, o = torch.randn(k, h, n), torch.randn(k, h), torch.randn(k, h), torch.randn(k, 1)
        a = torch.randn(m, n)
        hid = torch.squeeze(torch.matmul(w.repeat(reps, 1, 1)[:m], a[:, :, None]))
        g = torch.sum(p.repeat(reps, 1)[:m] * torch.relu(hid + q.repeat(reps, 1)[:m]), dim=1)
        b = g[:, None] + o.repeat(reps, 1)[:m] + self.sigma * torch.randn(m)[:, None]
        return {"A": a, "b": b, "W": w, "p": p, "q": q, "o": o}

    def evaluate(self, x: torch.Tensor | list[torch.Tensor]) -> torch.Tensor:
        d = self.data()
        if self.name != "nonlinear":
            return ((d["A"] @ x.T - d["b"]) ** 2).T
        w, p, q, o = x
        out = torch.sum(p[:, :, None] * torch.relu(w @ d["A"].T + q[:, :, None]), dim=1) + o
        return ((out.T - d["b"]) ** 2).T


class OfficialSetModel(torch.nn.Module):
    """The scripts' SetModel: U(0, 1) (quadratic) or N(0, 1) from the global RNG."""

    def __init__(self, name: str, k: int, n_dim: int) -> None:
        super().__init__()
        h = SPECS[name].hidden
        if name == "quadratic":
            self.solutions = torch.nn.ParameterList([torch.nn.Parameter(torch.rand(k, n_dim))])
        elif name == "linear":
            self.solutions = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(k, n_dim))])
        else:
            shapes = [(k, h, n_dim), (k, h), (k, h), (k, 1)]  # W, p, q, o
            self.solutions = torch.nn.ParameterList(
                [torch.nn.Parameter(torch.randn(*s)) for s in shapes]
            )

    def forward(self) -> torch.Tensor | list[torch.Tensor]:
        sols = list(self.solutions)
        return sols[0] if len(sols) == 1 else sols


def official_loss(method: str, values: torch.Tensor, pref: torch.Tensor, mu: float) -> torch.Tensor:
    """The scripts' inline losses on the K x m matrix."""
    if method == "stch-set":
        return mu * torch.logsumexp(-mu * torch.logsumexp(-values / mu, dim=0) / mu, dim=0)
    if method == "tch-set":
        return torch.max(torch.min(values, dim=0)[0])
    if method == "som":
        return torch.mean(torch.min(values, dim=0)[0])
    if method == "stch":
        return torch.sum(0.01 * torch.logsumexp(pref * values / 0.01, dim=1))
    if method == "tch":
        return torch.sum(torch.max(pref * values, dim=1)[0])
    if method == "ls":
        return torch.sum(pref * values)
    raise ValueError(f"the official scripts have no method {method!r}")


def train_official(
    name: str,
    method: str,
    seed: int,
    steps: int,
    m: int,
    k: int,
    n_dim: int = 10,
    check_every: int = 0,
    stop_below: float = -math.inf,
) -> tuple[float, int, float]:
    """Run the official loop for run `seed`; return (final worst case, steps run, seconds).

    The global RNG is first put where the official script leaves it before run `seed` (after
    run seed - 1's data; run 9 before run 0), so the initialisation is data.official_init's.

    With check_every > 0 the averaged weights are evaluated every check_every steps (as our
    optimize does) and the loop stops once the worst case is <= stop_below.
    """
    previous = seed - 1 if seed > 0 else OFFICIAL_RUNS - 1
    OfficialProblem(name, n_dim, m, k, previous).data()  # the stream run `seed` starts from
    problem = OfficialProblem(name, n_dim, m, k, seed)
    model = OfficialSetModel(name, k, n_dim)
    opt_cls = (
        schedulefree.AdamWScheduleFree if name == "nonlinear" else schedulefree.SGDScheduleFree
    )
    opt = opt_cls(model.parameters(), lr=1e-2, warmup_steps=100)
    pref = torch.tensor(np.random.default_rng(seed).dirichlet(np.ones(m), k)).float()
    model.train()
    opt.train()
    start, done = time.perf_counter(), 0
    for step in range(steps):
        mu = float(np.exp(-3e-4 * step)) if name == "nonlinear" else 0.1
        value = official_loss(method, problem.evaluate(model()), pref, mu)
        opt.zero_grad()
        value.backward()
        opt.step()
        done = step + 1
        if check_every and done % check_every == 0:
            opt.eval()
            with torch.no_grad():
                worst = float(problem.evaluate(model()).min(dim=0)[0].max())
            opt.train()
            if worst <= stop_below:
                break
    seconds = time.perf_counter() - start
    opt.eval()
    with torch.no_grad():
        worst = float(problem.evaluate(model()).min(dim=0)[0].max())
    return worst, done, seconds
