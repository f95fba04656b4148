"""The paper's synthetic many-objective problems (deterministic in the seed) and user problems.

Each problem maps a set of K solutions (a list of parameter tensors, each with leading size K) to
the K x m objective matrix F[k, i] = f_i(x^(k)). Problems of several seeds stack into one problem
with a leading seed axis (`stack`), whose evaluate maps (S, K, ...) solutions to (S, K, m).

Data is drawn once per run from a local torch.Generator seeded with the seed, in the same order as
the official `problem.py`, so our seed-s instance is the official seed-s instance: inputs,
centres, teachers and noise bit for bit, the nonlinear targets to rounding (tests/test_official.py). `official_init` replays the official scripts' initialisation, which
comes from the global RNG stream left behind by the previous run's data (see its docstring).
"""

from __future__ import annotations

import csv
import dataclasses
import importlib
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

import torch

Params = list[torch.Tensor]
USER = "user"
"""Problem name of a user problem (--problem-file or --problem-entry)."""
USER_K = 5
"""Default K of a user problem."""
OFFICIAL_RUNS = 10
"""n_run of the official scripts: run 0 inherits the RNG stream of run n_run - 1 (of the method before)."""


@dataclasses.dataclass(frozen=True)
class ProblemSpec:
    m: int
    """Default number of objectives (the paper's value)."""
    k: int
    """Default number of solutions; the official code also uses it as the number of centres."""
    sigma: float = 0.0
    """Label noise of the regression problems."""
    hidden: int = 0
    """Hidden width of each network solution (network problems only)."""
    depth: int = 0
    """Hidden layers of each network solution; 0 for a solution vector."""
    samples: int = 1
    """Data points per objective (network problems only)."""


SPECS: dict[str, ProblemSpec] = {
    "quadratic": ProblemSpec(m=128, k=5),
    "linear": ProblemSpec(m=1000, k=5, sigma=0.1),
    "nonlinear": ProblemSpec(m=1000, k=10, sigma=1.0, hidden=5, depth=1),
    "deep": ProblemSpec(m=256, k=5, sigma=0.1, hidden=16, depth=2, samples=16),
}


@dataclasses.dataclass(frozen=True)
class VectorProblem:
    """f_i(x) = (a_i . x - b_i)^2 for solution vectors x in R^n (quadratic, mixed linear, CSV)."""

    a: torch.Tensor
    """(..., m, n) design."""
    b: torch.Tensor
    """(..., m) targets."""
    uniform_init: bool
    """Initialise solutions U(0, 1) (official quadratic) instead of N(0, 1) (official regression)."""
    truth: Params | None = None
    """Ground-truth centres (..., K, n) of a regression problem (the oracle row), else None."""

    @property
    def m(self) -> int:
        return self.a.shape[-2]

    def init_solutions(self, k: int, gen: torch.Generator) -> Params:
        draw = torch.rand if self.uniform_init else torch.randn
        return [draw((k, self.a.shape[-1]), generator=gen, dtype=self.a.dtype).to(self.a.device)]

    def evaluate(self, params: Params) -> torch.Tensor:
        """(..., K, m) objective matrix in one (batched) matrix product."""
        return (params[0] @ self.a.mT - self.b.unsqueeze(-2)) ** 2

    def evaluate_naive(self, params: Params) -> torch.Tensor:
        """The same matrix by a Python loop over solutions and objectives (test reference)."""
        x = params[0]
        rows = [
            torch.stack([(self.a[i] @ x[k] - self.b[i]) ** 2 for i in range(self.m)])
            for k in range(x.shape[0])
        ]
        return torch.stack(rows)


def mlp_forward(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """P one-output ReLU networks on (..., m, s, n) inputs -> (..., P, m, s).

    params = [W_1, c_1, ..., W_L, c_L, p, o] with W_1 (..., P, h, n), W_l (..., P, h, h),
    c_l (..., P, h), p (..., P, h), o (..., P, 1): net(a) = p . relu(... relu(W_1 a + c_1) ...) + o,
    the official nonlinear problem's p . relu(W a + q) + o for L = 1. The first layer of all P
    networks is one matrix product with the m * s inputs.
    """
    *layers, p, o = params
    *lead, m, s, n = inputs.shape
    w = layers[0]
    nets, hidden = w.shape[-3], w.shape[-2]
    flat = inputs.reshape(*lead, m * s, n).mT
    h = (w.reshape(*w.shape[:-3], nets * hidden, n) @ flat).reshape(*lead, nets, hidden, m * s)
    h = torch.relu(h + layers[1].unsqueeze(-1))
    for w_l, c_l in zip(layers[2::2], layers[3::2]):
        h = torch.relu(w_l @ h + c_l.unsqueeze(-1))
    out = (p.unsqueeze(-2) @ h).squeeze(-2) + o
    return out.reshape(*out.shape[:-1], m, s)


def mlp_shapes(n: int, hidden: int, depth: int) -> list[tuple[int, ...]]:
    shapes: list[tuple[int, ...]] = []
    for layer in range(depth):
        shapes += [(hidden, n if layer == 0 else hidden), (hidden,)]
    return shapes + [(hidden,), (1,)]


def draw_networks(gen: torch.Generator, k: int, n: int, hidden: int, depth: int) -> Params:
    """k networks with N(0, 1) weights, in our layout [W_1, c_1, ..., p, o].

    One hidden layer draws in the official order W, p, q, o (problem.py's centres and the
    official SetModel), so that the official instance and initialisation are reproduced.
    """
    if depth == 1:
        shapes = [(hidden, n), (hidden,), (hidden,), (1,)]
        w, p, q, o = (torch.randn((k, *s), generator=gen) for s in shapes)
        return [w, q, p, o]
    return [torch.randn((k, *s), generator=gen) for s in mlp_shapes(n, hidden, depth)]


@dataclasses.dataclass(frozen=True)
class NetworkProblem:
    """f_i(theta) = mean_s (net_theta(a_is) - b_is)^2: each solution is a small ReLU network."""

    a: torch.Tensor
    """(..., m, s, n) inputs."""
    b: torch.Tensor
    """(..., m, s) targets."""
    hidden: int
    depth: int
    truth: Params | None = None
    """The k teacher networks that generated the targets (the oracle row)."""

    @property
    def m(self) -> int:
        return self.a.shape[-3]

    def init_solutions(self, k: int, gen: torch.Generator) -> Params:
        nets = draw_networks(gen, k, self.a.shape[-1], self.hidden, self.depth)
        return [p.to(self.a) for p in nets]

    def evaluate(self, params: Params) -> torch.Tensor:
        return ((mlp_forward(params, self.a) - self.b.unsqueeze(-3)) ** 2).mean(dim=-1)

    def evaluate_naive(self, params: Params) -> torch.Tensor:
        """Loop over solutions, objectives and samples with one network at a time."""
        *layers, p, o = params
        rows = []
        for k in range(params[0].shape[0]):
            row = []
            for i in range(self.m):
                errs = []
                for s in range(self.a.shape[1]):
                    h = self.a[i, s]
                    for w, c in zip(layers[0::2], layers[1::2]):
                        h = torch.relu(w[k] @ h + c[k])
                    errs.append((p[k] @ h + o[k, 0] - self.b[i, s]) ** 2)
                row.append(torch.stack(errs).mean())
            rows.append(torch.stack(row))
        return torch.stack(rows)


@dataclasses.dataclass(frozen=True)
class CallableProblem:
    """A user's objectives: fn maps a (K, n) tensor of solutions to the (K, m) objective matrix."""

    fn: Callable[[torch.Tensor], torch.Tensor]
    name: str
    """The entry point, for error messages."""
    n: int
    m: int
    truth: None = None

    def init_solutions(self, k: int, gen: torch.Generator) -> Params:
        return [torch.randn((k, self.n), generator=gen)]

    def evaluate(self, params: Params) -> torch.Tensor:
        x = params[0]
        flat = x.reshape(-1, *x.shape[-2:])
        try:
            out = [self.fn(sols) for sols in flat]
        except Exception as exc:  # noqa: BLE001 (user code: bad input, not our traceback)
            raise ValueError(
                f"problem entry {self.name} failed: {type(exc).__name__}: {exc}"
            ) from None
        for value in out:
            if not isinstance(value, torch.Tensor) or value.shape != (x.shape[-2], self.m):
                got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value)
                raise ValueError(
                    f"problem entry {self.name} must return a (K, m) = ({x.shape[-2]}, {self.m}) "
                    f"tensor, got {got}"
                )
        return torch.stack(out).reshape(*x.shape[:-2], x.shape[-2], self.m)


Problem = VectorProblem | NetworkProblem | CallableProblem


def sizes(name: str, m: int | None, k: int | None) -> tuple[int, int]:
    """(m, K) of a built-in problem: the given values, or the paper's where None."""
    spec = SPECS[name]
    return (spec.m if m is None else m), (spec.k if k is None else k)


def draw_problem(name: str, gen: torch.Generator, m: int, k: int, n_dim: int) -> Problem:
    """One instance of SPECS[name] from `gen`, in the official problem.py's order of draws.

    Regression problems have k ground-truth centres, objective i drawn from centre i mod k (the
    official code passes K as the number of centres).
    """
    spec = SPECS[name]
    centre = torch.arange(m) % k
    if name == "quadratic":
        a = 2 * torch.rand(m, n_dim, generator=gen) - 1
        b = 4 * torch.rand(m, generator=gen) - 2
        return VectorProblem(a, b, uniform_init=True)
    if name == "linear":
        centres = 4 * torch.rand(k, n_dim, generator=gen) - 2
        a = 2 * torch.rand(m, n_dim, generator=gen) - 1
        b = (a * centres[centre]).sum(dim=1) + spec.sigma * torch.randn(m, generator=gen)
        return VectorProblem(a, b, uniform_init=False, truth=[centres])
    teachers = draw_networks(gen, k, n_dim, spec.hidden, spec.depth)
    a = torch.randn(m, spec.samples, n_dim, generator=gen)
    clean = mlp_forward(teachers, a)[centre, torch.arange(m)]
    b = clean + spec.sigma * torch.randn(m, spec.samples, generator=gen)
    return NetworkProblem(a, b, spec.hidden, spec.depth, truth=teachers)


def to_device(problem: Problem, device: str) -> Problem:
    if isinstance(problem, CallableProblem):
        return problem
    truth = None if problem.truth is None else [t.to(device) for t in problem.truth]
    return dataclasses.replace(problem, a=problem.a.to(device), b=problem.b.to(device), truth=truth)


def make_problem(
    name: str,
    seed: int,
    m: int | None = None,
    k: int | None = None,
    n_dim: int = 10,
    device: str = "cpu",
) -> Problem:
    """Build one of SPECS from `seed`; m and k default to the paper's values."""
    if name not in SPECS:
        raise ValueError(f"unknown problem {name!r}; expected one of {sorted(SPECS)}")
    m, k = sizes(name, m, k)
    return to_device(draw_problem(name, torch.Generator().manual_seed(seed), m, k, n_dim), device)


def official_init(name: str, seed: int, m: int, k: int, n_dim: int) -> Params:
    """The initial solutions the official script draws for run `seed` (K solutions).

    The official scripts never seed the RNG for the initialisation: SetModel draws from the
    global stream, which the previous run's last `evaluate` left at torch.manual_seed(seed - 1)
    plus that run's data draws (and Mixed_Linear_Regression.__init__ draws a throw-away
    randn(K, n) before it). Run 0 of the first method is unseeded (torch seeds the default
    generator randomly); every later method's run 0 inherits run 9, which we use for seed 0.
    """
    if name not in ("quadratic", "linear", "nonlinear"):
        raise ValueError(
            f"--init official replays the official scripts and exists for quadratic, linear and "
            f"nonlinear only, got problem {name!r}"
        )
    previous = seed - 1 if seed > 0 else OFFICIAL_RUNS - 1
    gen = torch.Generator().manual_seed(previous)
    draw_problem(name, gen, m, k, n_dim)
    if name == "linear":
        torch.randn(k, n_dim, generator=gen)
    if name == "quadratic":
        return [torch.rand(k, n_dim, generator=gen)]
    if name == "linear":
        return [torch.randn(k, n_dim, generator=gen)]
    return draw_networks(gen, k, n_dim, SPECS[name].hidden, 1)


def stack(problems: list[Problem]) -> Problem:
    """One problem with a leading seed axis from same-sized instances."""
    first = problems[0]
    if isinstance(first, CallableProblem):
        return first  # a user problem has no seed-dependent data
    truth = None
    if first.truth is not None:
        truth = [torch.stack(ts) for ts in zip(*(p.truth for p in problems))]
    return dataclasses.replace(
        first,
        a=torch.stack([p.a for p in problems]),
        b=torch.stack([p.b for p in problems]),
        truth=truth,
    )


def load_csv_problem(path: str | Path) -> VectorProblem:
    """A CSV of objective parameters: one row per objective i, columns a_i1, ..., a_in, b_i, so
    f_i(x) = (a_i . x - b_i)^2. A first row that is not numeric is read as a header."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"problem file {path} does not exist")
    try:
        with path.open(newline="") as fh:
            rows = [row for row in csv.reader(fh) if row and any(c.strip() for c in row)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"problem file {path} cannot be read as CSV: {exc}") from None
    if rows and not _is_number(rows[0][0]):
        rows = rows[1:]
    if len(rows) < 2 or len(rows[0]) < 2:
        raise ValueError(
            f"problem file {path} needs >= 2 rows (objectives) of >= 2 columns (a_i..., b_i)"
        )
    values = []
    for line, row in enumerate(rows, start=1):
        if len(row) != len(rows[0]):
            raise ValueError(
                f"problem file {path}: data row {line} has {len(row)} columns, expected {len(rows[0])}"
            )
        bad = [c for c in row if not _is_number(c)]
        if bad:
            raise ValueError(
                f"problem file {path}: data row {line} has a non-finite or non-numeric value {bad[0]!r}"
            )
        values.append([float(c) for c in row])
    table = torch.tensor(values)
    return VectorProblem(table[:, :-1].contiguous(), table[:, -1].contiguous(), uniform_init=False)


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def load_entry_problem(entry: str, n_dim: int) -> CallableProblem:
    """`module:function` (importable, or a module in the working directory), function(X: (K, n_dim)
    tensor) -> (K, m) objectives."""
    module_name, _, attr = entry.partition(":")
    if not module_name or not attr:
        raise ValueError(f"problem entry must look like module:function, got {entry!r}")
    if os.getcwd() not in sys.path:  # a console script's sys.path lacks the working directory
        sys.path.append(os.getcwd())
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"problem entry {entry!r} cannot be imported: {exc}") from None
    if not callable(fn):
        raise ValueError(f"problem entry {entry!r} is not callable")  # noqa: TRY004 (CLI error)
    try:
        with torch.no_grad():
            probe = fn(torch.zeros(1, n_dim))
    except Exception as exc:  # noqa: BLE001 (user code: bad input, not our traceback)
        raise ValueError(f"problem entry {entry!r} failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(probe, torch.Tensor) or probe.ndim != 2 or probe.shape[0] != 1:
        got = tuple(probe.shape) if isinstance(probe, torch.Tensor) else type(probe).__name__
        raise ValueError(
            f"problem entry {entry!r} must map a (K, {n_dim}) tensor to a (K, m) tensor, "
            f"got {got} for K = 1"
        )
    return CallableProblem(fn, entry, n_dim, probe.shape[1])
