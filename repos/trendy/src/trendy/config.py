"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`trendy train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

from .pde import REACTIONS, stability_limit
from .scattering import MEASUREMENTS


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for parameters, initial fields, noise and network initialisation."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """Torch device (cpu, cuda, cuda:1, ...)."""
    out: str = "runs/quick"
    """Folder for config.json, metrics.json and figures of one run."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    system: str = "brusselator"
    """Reaction-diffusion system: brusselator (closed-form Hopf/Turing lines) or gray-scott."""
    grid: int = 16
    """Grid points per side of the periodic square domain."""
    dx: float = 2.0
    """Grid spacing."""
    diffusion: tuple[float, float] = (1.0, 8.0)
    """Diffusion coefficients (D_u, D_v)."""
    dt: float = 0.025
    """Explicit-Euler step of the PDE solver (must be below dx^2 / (4 max D))."""
    t_end: float = 50.0
    """Simulated PDE time."""
    n_frames: int = 41
    """Saved frames per trajectory, frame 0 being the initial state."""
    init_noise: float = 0.1
    """Standard deviation of the noise around the homogeneous state at t=0."""
    param_low: tuple[float, float] = (1.5, 1.0)
    """Lower corner of the parameter box (A, B) or (F, k)."""
    param_high: tuple[float, float] = (2.5, 8.0)
    """Upper corner of the parameter box; Brusselator B is also capped at 1 + A^2 + b_over_hopf."""
    b_over_hopf: float = 0.8
    """Brusselator only: largest B above the Hopf line (keeps explicit Euler stable)."""
    band: float = 0.3
    """Brusselator only: parameters with |B - B_T| or |B - B_H| below this are held out."""
    n_train: int = 96
    """Training trajectories."""
    n_test: int = 48
    """Test trajectories (drawn from the held-out bands for the Brusselator)."""
    noise: float = 0.0
    """Observation noise on the fields, relative to each field's standard deviation."""
    patches: float = 0.0
    """Fraction of each frame hidden by one random zero patch (occlusion); 0 turns it off."""
    measurement: str = "scattering"
    """Measurement Phi: scattering (TRENDy), mean or fourier (baselines)."""
    scattering_j: int = 2
    """Scattering scales J."""
    scattering_l: int = 8
    """Scattering orientations L."""
    n_components: int = 6
    """PCA components kept from the standardised measurement."""
    hidden: int = 64
    """Hidden units per layer of the neural ODE's MLP."""
    depth: int = 4
    """Hidden layers of the neural ODE's MLP."""
    euler_steps: int = 40
    """Euler steps of the neural ODE over rescaled time [0, 1] (a multiple of n_frames-1)."""
    epochs: int = 300
    """Full-batch Adam steps on the trajectory loss (the brief's CPU plan: about 300)."""
    lr: float = 1e-3
    """Adam learning rate."""
    beta: float = 1e-4
    """Weight of the first-derivative term of the trajectory loss (paper Eq. 4)."""
    sindycp: bool = True
    """Also fit and score the SINDyCP baseline on the same reduced states."""
    sindy_threshold: float = 0.05
    """STLSQ threshold of the SINDyCP baseline."""
    sweep_points: int = 31
    """Brusselator only: B values per held-out A in the bifurcation sweep."""
    sweep_a: tuple[float, ...] = (1.6, 1.8, 2.0, 2.2, 2.4)
    """Brusselator only: values of A where the Hopf and Turing lines are located."""
    gray_scott_study: bool = False
    """Benchmark only: also run TRENDy and SINDyCP on Gray-Scott at each noise level (Fig. 3)."""


# The official Gray-Scott family (pde_configurations.json): what `gray_scott_config` swaps in.
GRAY_SCOTT = {
    "system": "gray-scott",
    "param_low": (0.002, 0.05),
    "param_high": (0.11, 0.073),
    "diffusion": (0.1, 0.05),
    "dx": 1.0,
    "dt": 1.0,
    "t_end": 4000.0,
    "init_noise": 0.1,
}


def gray_scott_config(cfg: Config) -> Config:
    """cfg with the Gray-Scott system, parameter box, diffusion and solver of the official code."""
    return dataclasses.replace(cfg, **GRAY_SCOTT)


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "full": Config(
        name="full",
        out="runs/full",
        device="cuda",
        grid=64,
        dx=1.0,
        dt=0.01,
        t_end=20.0,
        n_frames=101,
        euler_steps=100,
        n_train=2000,
        n_test=500,
        n_components=8,
        epochs=1000,
        lr=1e-4,
        gray_scott_study=True,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    if cfg.system not in REACTIONS:
        raise ValueError(f"system must be one of {sorted(REACTIONS)}, got {cfg.system!r}")
    if cfg.measurement not in MEASUREMENTS:
        raise ValueError(
            f"measurement must be one of {sorted(MEASUREMENTS)}, got {cfg.measurement!r}"
        )
    limit = stability_limit(cfg.dx, cfg.diffusion)
    if not 0 < cfg.dt < limit:
        raise ValueError(
            f"dt={cfg.dt} is unstable: explicit Euler needs 0 < dt < dx^2/(4 max D) = {limit:.5g}"
        )
    if cfg.n_frames < 2 or cfg.euler_steps % (cfg.n_frames - 1):
        raise ValueError(
            f"euler_steps={cfg.euler_steps} must be a multiple of n_frames-1={cfg.n_frames - 1}"
        )
    if cfg.n_train < 2 or cfg.n_test < 1 or cfg.epochs < 1:
        raise ValueError(
            f"need n_train >= 2, n_test >= 1, epochs >= 1; got {cfg.n_train}, {cfg.n_test}, "
            f"{cfg.epochs}"
        )
    if cfg.noise < 0 or not 0 <= cfg.patches < 1:
        raise ValueError(f"need noise >= 0 and 0 <= patches < 1, got {cfg.noise}, {cfg.patches}")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    return cfg
