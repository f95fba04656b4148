"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`oft-sinkhorn train --help`). Bounds stand beside their fields
(`Annotated[int, Ge(1)]`, checked by runtime.check_bounds); `validate` adds the checks that involve
several fields or a set of names. Presets are plain instances; a command-line flag overrides the
preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

from .runtime import Annotated, Ge, Gt, Interval, MinLen, RunConfig, check_bounds

GENERATORS = ("uniform", "netgen", "netgen-cap", "netgen-node")
SOLVERS = ("jacobi", "anderson", "lbfgs")


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    generator: str = "netgen-cap"
    """Instance family for `train`: uniform, netgen (uncapacitated), netgen-cap (arc capacities)
    or netgen-node (arc and node capacities)."""
    instance: str = ""
    """DIMACS .min file for `train` to solve instead of a generated instance."""
    n: Annotated[int, Ge(10)] = 100
    """Nodes of the generated instance that `train` solves."""
    families: Annotated[tuple[str, ...], MinLen(1)] = GENERATORS
    """Instance families the benchmark sweeps."""
    sizes: Annotated[tuple[int, ...], MinLen(1), Ge(10)] = (50, 100, 200, 500)
    """Node counts N the benchmark sweeps, for every family."""
    degree: Annotated[int, Ge(1)] = 8
    """Mean out-degree of the random arcs of the generators."""
    node_share: Annotated[float, Interval(ge=0, le=1)] = 0.5
    """Share of transshipment nodes with a throughput bound in netgen-node instances."""
    eps: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (0.3, 0.1, 0.03, 0.01, 0.003, 0.001)
    """Annealing schedule of the entropic regularisation, relative to the largest arc cost."""
    tol: Annotated[float, Gt(0)] = 1e-4
    """Stop an eps stage when (||P1 - P^T 1 - s||_1 + node-capacity excess) / ||s||_1 < tol."""
    max_iter: Annotated[int, Ge(1)] = 50_000
    """Iteration budget of one eps stage (a stage that spends it is reported as not converged)."""
    solver: str = "lbfgs"
    """Stage solver: jacobi (plain OFT-Sinkhorn), anderson (Anderson-accelerated OFT-Sinkhorn) or
    lbfgs (L-BFGS-B on the EOFT dual); all three share the fixed point. lbfgs is the default
    because it was the only one to reach tol on every stage of node-capacitated N=500 instances."""
    damping: Annotated[float, Interval(gt=-1, lt=1)] = 0.5
    """Weight kept on the old potential in the OFT-Sinkhorn update (0 = undamped, < 0 =
    over-relaxation); used by jacobi and anderson."""
    memory: Annotated[int, Ge(1)] = 10
    """History length of anderson and lbfgs."""
    kernel: str = "sparse"
    """Gibbs kernel layout: sparse (arc list) or dense (N x N matrix)."""
    float32: bool = False
    """Iterate in float32 instead of float64."""
    tune: bool = True
    """Benchmark: tune each solver's setting on a validation instance before using it."""
    tune_n: Annotated[int, Ge(10)] = 30
    """Benchmark: nodes of the validation instances (netgen and netgen-node, seed 1000)."""
    compare_n: Annotated[int, Ge(10)] = 50
    """Benchmark: N at which all three solvers run side by side on every seed."""
    compare_families: Annotated[tuple[str, ...], MinLen(1)] = ("netgen", "netgen-node")
    """Benchmark: families of the side-by-side solver comparison."""
    compare_max_iter: Annotated[int, Ge(1)] = 150_000
    """Benchmark: per-stage budget in the comparison (large, so that plain jacobi converges: it
    needed at most 44,310 iterations per stage at N = 50)."""
    control_n: Annotated[int, Ge(10)] = 100
    """Benchmark: N of the negative controls (capacities dropped, solver capped at old budget)."""
    timing_sizes: Annotated[tuple[int, ...], Ge(10)] = ()
    """Benchmark: extra N for timing rows (one seed, uniform and netgen, exact solvers timed)."""
    bipartite_size: Annotated[int, Ge(2)] = 40
    """Sources and sinks of the bipartite instances compared with POT's Sinkhorn."""
    bipartite_eps: Annotated[float, Gt(0)] = 0.05
    """Regularisation (absolute; costs lie in [0, 1)) of the comparison with POT."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "paper": Config(
        name="paper",
        out="runs/paper",
        sizes=(200, 500, 1000, 2000),
        tune_n=50,
        compare_n=100,
        control_n=500,
        timing_sizes=(5000,),
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
        sizes=(1000, 2000, 5000),
        eps=(0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 0.0003),
        max_iter=200_000,
        kernel="dense",
        tune_n=200,
        compare_n=1000,
        compare_max_iter=300_000,
        control_n=1000,
        timing_sizes=(10_000,),
        bipartite_size=1000,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    if cfg.generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {cfg.generator!r}")
    for name, values in [("families", cfg.families), ("compare_families", cfg.compare_families)]:
        if set(values) - set(GENERATORS):
            raise ValueError(f"{name} must be a non-empty subset of {GENERATORS}, got {values}")
    if cfg.solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {cfg.solver!r}")
    if cfg.kernel not in ("sparse", "dense"):
        raise ValueError(f"kernel must be sparse or dense, got {cfg.kernel!r}")
    if list(cfg.eps) != sorted(cfg.eps, reverse=True):
        raise ValueError(f"eps must be positive and decreasing, got {cfg.eps}")
    return cfg
