"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`oft-sinkhorn train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

GENERATORS = ("uniform", "netgen", "netgen-cap", "netgen-node")
SOLVERS = ("jacobi", "anderson", "lbfgs")


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json and figures/<name>-*.png (quick: *.png)."""
    seed: int = 0
    """Seed of the instance that `train` solves."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over (one instance per seed, family and size)."""
    device: str = "cpu"
    """Torch device (cpu, cuda, cuda:1, ...)."""
    threads: int = 1
    """CPU threads for torch (1 avoids oversubscribing a shared machine)."""
    out: str = "runs/quick"
    """Folder for config.json, metrics.json and stages.json of a `train` run."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    generator: str = "netgen-cap"
    """Instance family for `train`: uniform, netgen (uncapacitated), netgen-cap (arc capacities)
    or netgen-node (arc and node capacities)."""
    instance: str = ""
    """DIMACS .min file for `train` to solve instead of a generated instance."""
    n: int = 100
    """Nodes of the generated instance that `train` solves."""
    families: tuple[str, ...] = GENERATORS
    """Instance families the benchmark sweeps."""
    sizes: tuple[int, ...] = (50, 100, 200, 500)
    """Node counts N the benchmark sweeps, for every family."""
    degree: int = 8
    """Mean out-degree of the random arcs of the generators."""
    node_share: float = 0.5
    """Share of transshipment nodes with a throughput bound in netgen-node instances."""
    eps: tuple[float, ...] = (0.3, 0.1, 0.03, 0.01, 0.003, 0.001)
    """Annealing schedule of the entropic regularisation, relative to the largest arc cost."""
    tol: float = 1e-4
    """Stop an eps stage when (||P1 - P^T 1 - s||_1 + node-capacity excess) / ||s||_1 < tol."""
    max_iter: int = 50_000
    """Iteration budget of one eps stage (a stage that spends it is reported as not converged)."""
    solver: str = "lbfgs"
    """Stage solver: jacobi (plain OFT-Sinkhorn), anderson (Anderson-accelerated OFT-Sinkhorn) or
    lbfgs (L-BFGS-B on the EOFT dual); all three share the fixed point. lbfgs is the default
    because it was the only one to reach tol on every stage of node-capacitated N=500 instances."""
    damping: float = 0.5
    """Weight kept on the old potential in the OFT-Sinkhorn update (0 = undamped, < 0 =
    over-relaxation); used by jacobi and anderson."""
    memory: int = 10
    """History length of anderson and lbfgs."""
    kernel: str = "sparse"
    """Gibbs kernel layout: sparse (arc list) or dense (N x N matrix)."""
    float32: bool = False
    """Iterate in float32 instead of float64."""
    tune: bool = True
    """Benchmark: tune each solver's setting on a validation instance before using it."""
    tune_n: int = 30
    """Benchmark: nodes of the validation instances (netgen and netgen-node, seed 1000)."""
    compare_n: int = 50
    """Benchmark: N at which all three solvers run side by side on every seed."""
    compare_families: tuple[str, ...] = ("netgen", "netgen-node")
    """Benchmark: families of the side-by-side solver comparison."""
    compare_max_iter: int = 150_000
    """Benchmark: per-stage budget in the comparison (large, so that plain jacobi converges: it
    needed at most 44,310 iterations per stage at N = 50)."""
    control_n: int = 100
    """Benchmark: N of the negative controls (capacities dropped, solver capped at old budget)."""
    timing_sizes: tuple[int, ...] = ()
    """Benchmark: extra N for timing rows (one seed, uniform and netgen, exact solvers timed)."""
    bipartite_size: int = 40
    """Sources and sinks of the bipartite instances compared with POT's Sinkhorn."""
    bipartite_eps: float = 0.05
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
        device="cuda",
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
    if cfg.generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {cfg.generator!r}")
    for name, values, allowed in [
        ("families", cfg.families, GENERATORS),
        ("compare_families", cfg.compare_families, GENERATORS),
    ]:
        if not values or set(values) - set(allowed):
            raise ValueError(f"{name} must be a non-empty subset of {GENERATORS}, got {values}")
    if cfg.solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {cfg.solver!r}")
    if not 0 <= cfg.node_share <= 1 or cfg.memory < 1:
        raise ValueError(
            f"need node_share in [0, 1] and memory >= 1; got {cfg.node_share}, {cfg.memory}"
        )
    if cfg.kernel not in ("sparse", "dense"):
        raise ValueError(f"kernel must be sparse or dense, got {cfg.kernel!r}")
    if not cfg.eps or min(cfg.eps) <= 0 or list(cfg.eps) != sorted(cfg.eps, reverse=True):
        raise ValueError(f"eps must be positive and decreasing, got {cfg.eps}")
    if (
        not cfg.sizes
        or min((cfg.n, *cfg.sizes, cfg.tune_n, cfg.compare_n, cfg.control_n, *cfg.timing_sizes))
        < 10
    ):
        raise ValueError(
            f"instances need >= 10 nodes; got n={cfg.n}, sizes={cfg.sizes}, tune_n={cfg.tune_n}, "
            f"compare_n={cfg.compare_n}, control_n={cfg.control_n}, timing_sizes={cfg.timing_sizes}"
        )
    if cfg.tol <= 0 or min(cfg.max_iter, cfg.compare_max_iter, cfg.threads, cfg.degree) < 1:
        raise ValueError(
            f"need tol > 0 and max_iter, compare_max_iter, threads, degree >= 1; got {cfg.tol}, "
            f"{cfg.max_iter}, {cfg.compare_max_iter}, {cfg.threads}, {cfg.degree}"
        )
    if not -1 < cfg.damping < 1:
        raise ValueError(
            f"damping must lie in (-1, 1) (negative: over-relaxation), got {cfg.damping}"
        )
    if not cfg.seeds or cfg.bipartite_size < 2 or cfg.bipartite_eps <= 0:
        raise ValueError("need at least one seed, bipartite_size >= 2 and bipartite_eps > 0")
    validate_device(cfg.device)
    return cfg


def validate_device(device: str) -> None:
    """Raise ValueError unless torch knows `device` and, for cuda, a GPU is visible."""
    if device == "cpu":
        return
    import torch  # only here: the CPU path and the CLI's usage errors stay light

    try:
        kind = torch.device(device).type
    except RuntimeError:
        kind = None
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu, cuda or cuda:N, got {device!r}")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} is not available (no CUDA GPU); pass --device cpu")
