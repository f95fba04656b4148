"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`bnn-renorm train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for data and samplers."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """JAX platform to run on (cpu or gpu)."""
    out: str = "runs/quick"
    """Folder for config.json and metrics.json."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    s2: float = 1.0
    """Prior variance sigma^2 of every weight."""
    temperature: float = 0.02
    """Gibbs temperature T (observation-noise variance) of the linear-network posteriors."""
    n0: int = 80
    """Input dimension N0 of the linear teacher."""
    p: int = 40
    """Training points P of the linear-width experiment."""
    alphas: tuple[float, ...] = (0.25, 1.0, 4.0)
    """Load factors alpha = P / N of the linear-width experiment (width N = P / alpha)."""
    n_test: int = 20
    """Test inputs at which predictive variances are averaged."""
    teacher_scale: float = 3.0
    """Scale of the teacher's targets (moves u / s2 well away from 1)."""
    teacher_noise: float = 0.1
    """Standard deviation of the teacher's label noise before scaling."""
    gibbs_sweeps: int = 400
    """Blocked Gibbs sweeps per chain."""
    burn_in: int = 100
    """Gibbs sweeps discarded at the start of every chain."""
    relu_p: int = 24
    """Training digits of the ReLU experiment (sklearn digits, N0 = 64)."""
    relu_alphas: tuple[float, ...] = (0.5, 2.0)
    """Load factors of the ReLU experiment."""
    relu_temperature: float = 0.05
    """Temperature of the ReLU posteriors."""
    nuts_warmup: int = 100
    """NUTS warm-up steps per chain."""
    nuts_samples: int = 100
    """NUTS samples kept per chain."""
    sub_p: int = 400
    """Training points of the sublinear-width experiment (N much smaller than P)."""
    sub_widths: tuple[int, ...] = (5, 20)
    """Widths N of the sublinear-width experiment."""
    sub_sweeps: int = 20_000
    """Blocked Gibbs sweeps per chain in the sublinear-width experiment (its errors are < 1%)."""
    sub_burn_in: int = 4_000
    """Gibbs sweeps discarded at the start of every sublinear-width chain."""
    sub_relu_p: int = 100
    """Training points of the ReLU sublinear-width experiment (linear teacher, as the paper's)."""
    sub_relu_n0: int = 20
    """Input dimension of the ReLU sublinear-width experiment (P / N0 = 5, as the paper's)."""
    sub_relu_widths: tuple[int, ...] = (5, 20)
    """Widths N of the ReLU sublinear-width experiment (P / (N N0) = 1 and 0.25)."""
    perf_width: int = 10
    """Width of the network on which Gibbs and NUTS effective samples per second are compared."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "full": Config(
        name="full",
        out="runs/full",
        device="gpu",
        n0=500,
        p=200,
        alphas=(0.125, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0),
        gibbs_sweeps=20_000,
        burn_in=4_000,
        relu_p=200,
        relu_alphas=(0.25, 0.5, 1.0, 2.0, 4.0),
        nuts_warmup=1_000,
        nuts_samples=2_000,
        sub_p=2_000,
        sub_widths=(5, 10, 20, 40),
        sub_sweeps=100_000,
        sub_burn_in=20_000,
        sub_relu_p=200,
        sub_relu_n0=40,
        sub_relu_widths=(2, 5, 10, 20),
        perf_width=100,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    for name in ("s2", "temperature", "relu_temperature"):
        if not getattr(cfg, name) > 0:
            raise ValueError(f"{name} must be > 0, got {getattr(cfg, name)}")
    for name in (
        "n0",
        "p",
        "n_test",
        "relu_p",
        "sub_p",
        "sub_relu_p",
        "sub_relu_n0",
        "perf_width",
        "nuts_samples",
    ):
        if getattr(cfg, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(cfg, name)}")
    if not 0 <= cfg.burn_in < cfg.gibbs_sweeps:
        raise ValueError(f"need 0 <= burn_in < gibbs_sweeps, got {cfg.burn_in}, {cfg.gibbs_sweeps}")
    if not 0 <= cfg.sub_burn_in < cfg.sub_sweeps:
        raise ValueError(
            f"need 0 <= sub_burn_in < sub_sweeps, got {cfg.sub_burn_in}, {cfg.sub_sweeps}"
        )
    lists = (cfg.alphas, cfg.relu_alphas, cfg.sub_widths, cfg.sub_relu_widths, cfg.seeds)
    if not all(lists):
        raise ValueError(
            "alphas, relu_alphas, sub_widths, sub_relu_widths and seeds must each name a value"
        )
    if min(cfg.alphas + cfg.relu_alphas) <= 0 or min(cfg.sub_widths + cfg.sub_relu_widths) < 1:
        raise ValueError("alphas must be > 0 and sub_widths, sub_relu_widths >= 1")
    if cfg.device not in ("cpu", "gpu"):
        raise ValueError(f"device must be cpu or gpu, got {cfg.device!r}")
    return cfg
