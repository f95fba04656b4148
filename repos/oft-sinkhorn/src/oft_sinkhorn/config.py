"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`oft-sinkhorn train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

GENERATORS = ("uniform", "netgen", "netgen-cap")


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
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
    """Instance family for `train`: uniform, netgen (uncapacitated) or netgen-cap."""
    instance: str = ""
    """DIMACS .min file for `train` to solve instead of a generated instance."""
    n: int = 100
    """Nodes of the generated instance that `train` solves."""
    sizes: tuple[int, ...] = (50, 100, 200, 500)
    """Node counts N the benchmark sweeps, for every family."""
    degree: int = 8
    """Mean out-degree of the random arcs of the generators."""
    eps: tuple[float, ...] = (0.3, 0.1, 0.03, 0.01, 0.003)
    """Annealing schedule of the entropic regularisation, relative to the largest arc cost."""
    tol: float = 1e-4
    """Stop an eps stage when ||P1 - P^T 1 - s||_1 / ||s||_1 falls below this."""
    max_iter: int = 4000
    """Iteration cap of one eps stage."""
    damping: float = 0.5
    """Weight kept on the old potential in the Jacobi node update (0 = undamped)."""
    kernel: str = "sparse"
    """Gibbs kernel layout: sparse (arc list) or dense (N x N matrix)."""
    float32: bool = False
    """Iterate in float32 instead of float64."""
    bipartite_size: int = 40
    """Sources and sinks of the bipartite instances compared with POT's Sinkhorn."""
    bipartite_eps: float = 0.05
    """Regularisation (absolute; costs lie in [0, 1)) of the comparison with POT."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "full": Config(
        name="full",
        out="runs/full",
        device="cuda",
        sizes=(1000, 2000, 5000),
        eps=(0.3, 0.1, 0.03, 0.01, 0.003, 0.001),
        max_iter=20_000,
        kernel="dense",
        bipartite_size=1000,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    if cfg.generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {cfg.generator!r}")
    if cfg.kernel not in ("sparse", "dense"):
        raise ValueError(f"kernel must be sparse or dense, got {cfg.kernel!r}")
    if not cfg.eps or min(cfg.eps) <= 0 or list(cfg.eps) != sorted(cfg.eps, reverse=True):
        raise ValueError(f"eps must be positive and decreasing, got {cfg.eps}")
    if min((cfg.n, *cfg.sizes)) < 10:
        raise ValueError(f"instances need n >= 10 nodes, got n={cfg.n}, sizes={cfg.sizes}")
    if cfg.tol <= 0 or cfg.max_iter < 1 or cfg.threads < 1 or cfg.degree < 1:
        raise ValueError(
            f"need tol > 0, max_iter >= 1, threads >= 1, degree >= 1; got {cfg.tol}, {cfg.max_iter}, "
            f"{cfg.threads}, {cfg.degree}"
        )
    if not 0 <= cfg.damping < 1:
        raise ValueError(f"damping must lie in [0, 1), got {cfg.damping}")
    if not cfg.seeds or cfg.bipartite_size < 2 or cfg.bipartite_eps <= 0:
        raise ValueError("need at least one seed, bipartite_size >= 2 and bipartite_eps > 0")
    return cfg
