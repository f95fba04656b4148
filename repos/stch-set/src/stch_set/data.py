"""The paper's synthetic many-objective problems, deterministic in the seed.

Each problem maps a set of K solutions (a list of parameter tensors, each with leading size K) to
the K x m objective matrix F[k, i] = f_i(x^(k)). Data is generated once per run from a local
torch.Generator; the official `evaluate` instead re-seeds the global RNG and rebuilds the data at
every call (perf.py keeps that behaviour only as the speed reference).
"""

from __future__ import annotations

import dataclasses

import torch

Params = list[torch.Tensor]


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
    """f_i(x) = (a_i . x - b_i)^2 for solution vectors x in R^n (quadratic, mixed linear)."""

    a: torch.Tensor
    """(m, n) design."""
    b: torch.Tensor
    """(m,) targets."""
    uniform_init: bool
    """Initialise solutions U(0, 1) (official quadratic) instead of N(0, 1) (official regression)."""

    @property
    def m(self) -> int:
        return self.a.shape[0]

    def init_solutions(self, k: int, gen: torch.Generator) -> Params:
        shape = (k, self.a.shape[1])
        draw = torch.rand if self.uniform_init else torch.randn
        return [draw(shape, generator=gen, dtype=self.a.dtype).to(self.a.device)]

    def evaluate(self, params: Params) -> torch.Tensor:
        """(K, m) objective matrix in one matrix product."""
        return (params[0] @ self.a.T - self.b) ** 2

    def evaluate_naive(self, params: Params) -> torch.Tensor:
        """The same matrix by a Python loop over solutions and objectives (test/speed reference)."""
        x = params[0]
        rows = [
            torch.stack([(self.a[i] @ x[k] - self.b[i]) ** 2 for i in range(self.m)])
            for k in range(x.shape[0])
        ]
        return torch.stack(rows)


def mlp_forward(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """P one-output ReLU networks on (m, s, n) inputs -> (P, m, s).

    params = [W_1, c_1, ..., W_L, c_L, p, o] with W_1 (P, h, n), W_l (P, h, h), c_l (P, h),
    p (P, h), o (P, 1): net(a) = p . relu(... relu(W_1 a + c_1) ...) + o, as the official
    nonlinear problem (W, q, p, o) for L = 1.
    """
    *layers, p, o = params
    h = torch.relu(torch.einsum("phn,msn->pmsh", layers[0], inputs) + layers[1][:, None, None])
    for w, c in zip(layers[2::2], layers[3::2]):
        h = torch.relu(torch.einsum("pgh,pmsh->pmsg", w, h) + c[:, None, None])
    return torch.einsum("ph,pmsh->pms", p, h) + o[:, :, None]


def mlp_shapes(n: int, hidden: int, depth: int) -> list[tuple[int, ...]]:
    shapes: list[tuple[int, ...]] = []
    for layer in range(depth):
        shapes += [(hidden, n if layer == 0 else hidden), (hidden,)]
    return shapes + [(hidden,), (1,)]


@dataclasses.dataclass(frozen=True)
class NetworkProblem:
    """f_i(theta) = mean_s (net_theta(a_is) - b_is)^2: each solution is a small ReLU network."""

    a: torch.Tensor
    """(m, s, n) inputs."""
    b: torch.Tensor
    """(m, s) targets."""
    hidden: int
    depth: int

    @property
    def m(self) -> int:
        return self.a.shape[0]

    def init_solutions(self, k: int, gen: torch.Generator) -> Params:
        shapes = mlp_shapes(self.a.shape[2], self.hidden, self.depth)
        return [
            torch.randn((k, *s), generator=gen, dtype=self.a.dtype).to(self.a.device)
            for s in shapes
        ]

    def evaluate(self, params: Params) -> torch.Tensor:
        return ((mlp_forward(params, self.a) - self.b) ** 2).mean(dim=2)

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


Problem = VectorProblem | NetworkProblem


def sizes(name: str, m: int | None, k: int | None) -> tuple[int, int]:
    """(m, K) of a problem: the given values, or the paper's where None."""
    spec = SPECS[name]
    return (spec.m if m is None else m), (spec.k if k is None else k)


def make_problem(
    name: str,
    seed: int,
    m: int | None = None,
    k: int | None = None,
    n_dim: int = 10,
    device: str = "cpu",
) -> Problem:
    """Build one of SPECS from `seed`; m and k default to the paper's values.

    Regression problems have k ground-truth centres, objective i drawn from centre i mod k (the
    official code passes K as the number of centres).
    """
    if name not in SPECS:
        raise ValueError(f"unknown problem {name!r}; expected one of {sorted(SPECS)}")
    spec = SPECS[name]
    m, k = sizes(name, m, k)
    gen = torch.Generator().manual_seed(seed)
    centre = torch.arange(m) % k
    if name == "quadratic":
        a = 2 * torch.rand(m, n_dim, generator=gen) - 1
        b = 4 * torch.rand(m, generator=gen) - 2
        return VectorProblem(a.to(device), b.to(device), uniform_init=True)
    if name == "linear":
        centres = 4 * torch.rand(k, n_dim, generator=gen) - 2
        a = 2 * torch.rand(m, n_dim, generator=gen) - 1
        b = (a * centres[centre]).sum(dim=1) + spec.sigma * torch.randn(m, generator=gen)
        return VectorProblem(a.to(device), b.to(device), uniform_init=False)
    shapes = mlp_shapes(n_dim, spec.hidden, spec.depth)
    teachers = [torch.randn((k, *s), generator=gen) for s in shapes]
    a = torch.randn(m, spec.samples, n_dim, generator=gen)
    clean = mlp_forward(teachers, a)[centre, torch.arange(m)]
    b = clean + spec.sigma * torch.randn(m, spec.samples, generator=gen)
    return NetworkProblem(a.to(device), b.to(device), spec.hidden, spec.depth)
