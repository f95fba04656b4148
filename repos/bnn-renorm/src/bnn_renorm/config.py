"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`bnn-renorm train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .runtime import Annotated, Ge, Gt, MinLen, RunConfig, check_bounds


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    s2: Annotated[float, Gt(0)] = 1.0
    """Prior variance sigma^2 of every weight."""
    temperature: Annotated[float, Gt(0)] = 0.02
    """Gibbs temperature T (observation-noise variance) of the linear-network posteriors."""
    n0: Annotated[int, Ge(1)] = 500
    """Input dimension N0 of the linear teacher (the paper's Figure 1: N0 = 500)."""
    p: Annotated[int, Ge(1)] = 200
    """Training points P of the linear-width experiment (the paper's Figure 1: P = 200)."""
    alphas: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (0.25, 0.5, 1.0, 2.0, 4.0)
    """Load factors alpha = P / N of the linear-width experiment (width N = P / alpha)."""
    n_test: Annotated[int, Ge(1)] = 20
    """Test inputs at which predictive variances are averaged."""
    teacher_scale: Annotated[float, Gt(0)] = 3.0
    """Scale of the teacher's targets (moves u / s2 well away from 1)."""
    teacher_noise: Annotated[float, Ge(0)] = 0.1
    """Standard deviation of the teacher's label noise before scaling."""
    gibbs_s2s: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (0.5, 2.0)
    """Prior variances at which BPKR is checked against blocked Gibbs on the full weights (a, W)."""
    gibbs_alphas: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (2.0, 4.0)
    """Load factors alpha = P / N of that check (N0 = n0, P = p; width N = P / alpha)."""
    gibbs_sweeps: Annotated[int, Ge(1)] = 400
    """Blocked Gibbs sweeps per chain (the full-weight check and the sampler-speed comparison)."""
    burn_in: Annotated[int, Ge(0)] = 100
    """Gibbs sweeps discarded at the start of each chain."""
    relu_p: Annotated[int, Ge(1)] = 24
    """Training images of the ReLU linear-width experiment (digits, or MNIST with --mnist-*)."""
    relu_alphas: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (0.5, 2.0)
    """Load factors of the ReLU linear-width experiment."""
    relu_temperature: Annotated[float, Gt(0)] = 0.05
    """Temperature of the ReLU posteriors."""
    nuts_warmup: Annotated[int, Ge(0)] = 100
    """NUTS warm-up steps per chain in the ReLU linear-width experiment."""
    nuts_samples: Annotated[int, Ge(1)] = 100
    """NUTS samples kept per chain in the ReLU linear-width experiment."""
    mnist_images: str = ""
    """MNIST images idx file (train-images-idx3-ubyte[.gz]); with --mnist-labels, replaces digits."""
    mnist_labels: str = ""
    """MNIST labels idx file (train-labels-idx1-ubyte[.gz]) matching --mnist-images."""
    sub_relu_p: Annotated[int, Ge(1)] = 200
    """Training points of the sublinear-width experiment (linear teacher, the paper's P = 200)."""
    sub_relu_n0: Annotated[int, Ge(1)] = 40
    """Input dimension of the sublinear-width experiment (the paper's N0 = 40)."""
    sub_relu_widths: Annotated[tuple[int, ...], MinLen(1), Ge(1)] = (2, 5, 10, 20)
    """Widths N of the sublinear-width experiment (the paper's N in {2, 5, 10, 20})."""
    sub_nuts_warmup: Annotated[int, Ge(0)] = 400
    """NUTS warm-up steps per chain in the sublinear-width experiment (30 + 30 flips its claim)."""
    sub_nuts_samples: Annotated[int, Ge(1)] = 400
    """NUTS samples kept per chain in the sublinear-width experiment."""
    sub_restarts: Annotated[int, Ge(1)] = 4
    """Trained networks (MAP restarts) whose kernel spectra the sublinear estimator pools."""
    perf_p: Annotated[int, Ge(1)] = 40
    """Training points of the sampler-speed comparison (linear teacher)."""
    perf_n0: Annotated[int, Ge(1)] = 80
    """Input dimension of the sampler-speed comparison."""
    perf_width: Annotated[int, Ge(1)] = 10
    """Width of the network on which Gibbs and NUTS effective samples per second are compared."""


PRESETS: dict[str, Config] = {
    # `train`'s default: one seed in one to two minutes, to see every stage run.
    "demo": Config(
        name="demo",
        out="runs/demo",
        n0=100,
        p=40,
        alphas=(0.5, 2.0),
        relu_alphas=(2.0,),
        nuts_warmup=50,
        nuts_samples=50,
        sub_relu_p=60,
        sub_relu_n0=12,
        sub_relu_widths=(2, 10),
        sub_nuts_warmup=100,
        sub_nuts_samples=100,
        sub_restarts=2,
        perf_width=4,
        seeds=(0,),
    ),
    # The defaults: every experiment at the paper's sizes except the small ReLU linear-width one.
    "quick": Config(),
    # The smallest CPU scale of every paper experiment (README: Results, expected wall time).
    "paper": Config(
        name="paper",
        out="runs/paper",
        alphas=(0.125, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0),
        gibbs_alphas=(1.0, 2.0, 4.0),
        relu_p=60,
        relu_alphas=(0.5, 1.0, 2.0),
        nuts_warmup=400,
        nuts_samples=400,
        # Sublinear chains 2.5x quick's 400 + 400 (short chains can move the sublinear gates).
        sub_nuts_warmup=1_000,
        sub_nuts_samples=1_000,
        sub_restarts=8,
        perf_width=20,
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
        alphas=(0.125, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0),
        gibbs_alphas=(0.5, 1.0, 2.0, 4.0),
        gibbs_sweeps=20_000,
        burn_in=4_000,
        relu_p=200,
        relu_alphas=(0.25, 0.5, 1.0, 2.0, 4.0),
        nuts_warmup=1_000,
        nuts_samples=2_000,
        sub_nuts_warmup=2_000,
        sub_nuts_samples=4_000,
        sub_restarts=16,
        perf_width=100,
        seeds=(0, 1, 2, 3, 4),
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged.

    Single-field bounds stand beside the fields (check_bounds); these checks involve several."""
    check_bounds(cfg)
    if cfg.burn_in >= cfg.gibbs_sweeps:
        raise ValueError(f"need 0 <= burn_in < gibbs_sweeps, got {cfg.burn_in}, {cfg.gibbs_sweeps}")
    if max(cfg.sub_relu_widths) >= cfg.sub_relu_p:
        raise ValueError(
            f"the sublinear experiment needs every width < sub_relu_p={cfg.sub_relu_p}, "
            f"got {max(cfg.sub_relu_widths)}"
        )
    if bool(cfg.mnist_images) != bool(cfg.mnist_labels):
        raise ValueError("--mnist-images and --mnist-labels must be given together")
    for name in ("mnist_images", "mnist_labels"):
        path = getattr(cfg, name)
        if path and not Path(path).is_file():
            raise ValueError(f"{name}: no such file {path!r}")
    return cfg
