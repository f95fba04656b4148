"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`trendy train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

from .pde import REACTIONS, stability_limit
from .runtime import Annotated, Ge, Gt, Interval, MinLen, RunConfig, check_bounds
from .scattering import MEASUREMENTS


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    system: str = "brusselator"
    """Reaction-diffusion system: brusselator (closed-form Hopf/Turing lines) or gray-scott."""
    grid: Annotated[int, Ge(4)] = 16
    """Grid points per side of the periodic square domain."""
    dx: Annotated[float, Gt(0)] = 2.0
    """Grid spacing."""
    diffusion: Annotated[tuple[float, float], Gt(0)] = (1.0, 8.0)
    """Diffusion coefficients (D_u, D_v)."""
    dt: Annotated[float, Gt(0)] = 0.0125
    """Explicit-Euler step of the PDE solver (must be below dx^2 / (4 max D))."""
    t_end: Annotated[float, Gt(0)] = 50.0
    """Simulated PDE time."""
    n_frames: Annotated[int, Ge(2)] = 41
    """Saved frames per trajectory, frame 0 being the initial state."""
    init_noise: Annotated[float, Ge(0)] = 0.1
    """Standard deviation of the spatial noise added to the initial homogeneous level."""
    param_low: tuple[float, float] = (1.5, 1.0)
    """Lower corner of the parameter box (A, B) or (F, k)."""
    param_high: tuple[float, float] = (2.5, 8.0)
    """Upper corner of the parameter box; Brusselator B is also capped at 1 + A^2 + b_over_hopf."""
    b_over_hopf: Annotated[float, Gt(0)] = 0.8
    """Brusselator only: largest B above the Hopf line (keeps explicit Euler stable)."""
    band: Annotated[float, Gt(0)] = 0.3
    """Brusselator only: parameters within this of a line named in `bands` are held out."""
    bands: Annotated[tuple[str, ...], MinLen(1)] = ("turing",)
    """Brusselator only: the bifurcation lines (turing, hopf) whose bands form the test set."""
    init_spread: Annotated[float, Interval(ge=0, lt=1)] = 0.3
    """Homogeneous initial level drawn per trajectory as steady state x (1 + U(-s, s)); 0: at it
    (then the initial state alone gives the parameters away)."""
    above_hopf_share: Annotated[float, Interval(ge=0, le=1)] = 0.0
    """Brusselator only: share of the draws whose B is redrawn uniformly between the Hopf line
    and the cap (more oscillating training data); 0: uniform in the box."""
    n_train: Annotated[int, Ge(2)] = 96
    """Training trajectories."""
    n_test: Annotated[int, Ge(1)] = 48
    """Test trajectories (drawn from the held-out bands for the Brusselator)."""
    val_fraction: Annotated[float, Interval(gt=0, lt=0.9)] = 0.25
    """Share of the training trajectories held out as the validation split used for tuning."""
    data: str = ""
    """Folder or .npz of field snapshots to fit instead of simulating (see README, Real data)."""
    shuffle_theta: bool = False
    """Negative control: permute the parameters across training trajectories before fitting."""
    noise: Annotated[float, Ge(0)] = 0.0
    """Observation noise on the fields, relative to each field's standard deviation."""
    patches: Annotated[float, Interval(ge=0, lt=1)] = 0.0
    """Fraction of each frame hidden by one random zero patch (occlusion); 0 turns it off."""
    measurement: str = "scattering"
    """Measurement Phi: scattering (TRENDy), mean or fourier (baselines)."""
    scattering_j: Annotated[int, Ge(1)] = 2
    """Scattering scales J."""
    scattering_l: Annotated[int, Ge(1)] = 8
    """Scattering orientations L."""
    n_components: Annotated[int, Ge(1)] = 6
    """PCA components kept from the standardised measurement."""
    hidden: Annotated[int, Ge(1)] = 64
    """Hidden units per layer of the neural ODE's MLP."""
    depth: Annotated[int, Ge(0)] = 4
    """Hidden layers of the neural ODE's MLP."""
    euler_steps: Annotated[int, Ge(1)] = 40
    """Euler steps of the neural ODE over rescaled time [0, 1] (a multiple of n_frames-1)."""
    epochs: Annotated[int, Ge(0)] = 300
    """Full-batch Adam steps on the trajectory loss (0 leaves the network untrained)."""
    lr: Annotated[float, Gt(0)] = 1e-3
    """Adam learning rate (used when tune_lr is empty)."""
    tune_lr: Annotated[tuple[float, ...], Gt(0)] = (1e-3, 3e-3)
    """TRENDy's tuning grid: learning rates tried, the best on the validation split is kept."""
    beta: Annotated[float, Ge(0)] = 1e-4
    """Weight of the first-derivative term of the trajectory loss (paper Eq. 4)."""
    sindycp: bool = True
    """Also fit and score the SINDyCP baseline on the same reduced states."""
    sindy_threshold: Annotated[float, Ge(0)] = 0.05
    """STLSQ threshold of the SINDyCP baseline (used when tune_sindy_threshold is empty)."""
    tune_sindy_threshold: Annotated[tuple[float, ...], Ge(0)] = (0.05, 2.0)
    """SINDyCP's tuning grid of STLSQ thresholds, crossed with tune_sindy_components."""
    tune_sindy_components: Annotated[tuple[int, ...], Ge(0)] = (2, 0)
    """SINDyCP models the first k reduced coordinates (0: all) and holds the rest at their
    initial values; crossed with the thresholds, best on validation."""
    sweep_points: Annotated[int, Ge(2)] = 31
    """Brusselator only: B values per A in the bifurcation sweeps."""
    sweep_repeats: Annotated[int, Ge(1)] = 4
    """Brusselator only: perturbed initial states per sweep point (readouts are averaged)."""
    sweep_a: Annotated[tuple[float, ...], Gt(0)] = (1.6, 1.8, 2.0, 2.2, 2.4)
    """Brusselator only: values of A where the Hopf and Turing lines are located."""
    ablations: tuple[str, ...] = ("mean",)
    """Benchmark only: measurements TRENDy is also fitted with in the Turing setting (noise 0)."""
    workers: Annotated[int, Ge(1)] = 2
    """Benchmark only: processes running the (seed, setting) jobs, one CPU thread each."""
    hopf_sweep_a: Annotated[tuple[float, ...], Gt(0)] = (1.2, 1.5, 1.8, 2.1, 2.4)
    """Benchmark only: values of A where the Hopf line is located in the Hopf setting."""
    hopf_seeds: tuple[int, ...] = (3, 4)
    """Benchmark only: extra seeds run in the Hopf setting alone (its 2-D model is cheap)."""
    hopf_steps: Annotated[int, Ge(1)] = 50
    """Benchmark only: frames - 1 (= Euler steps) of the Hopf setting over T = 20."""
    hopf_measurements: tuple[str, ...] = ("mean",)
    """Benchmark only: measurements fitted in the Hopf setting (mean: the official 2-D model)."""
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


# The official Hopf analysis (run/scripts/bifurcations/plot_hopf_manifold.py): diffusion (0.1, 0.2),
# where the Hopf line lies below the Turing line, a 2-D channel-average model, and random
# homogeneous initial levels (BrusselatorFull's noise_rand_center). B stops 0.8 above the Hopf
# line, below the grid's Turing onset, so the data show homogeneous decay and oscillation only.
HOPF_SETTING = {
    "system": "brusselator",
    "diffusion": (0.1, 0.2),
    "dx": 1.0,
    "dt": 0.02,
    "t_end": 20.0,
    "param_low": (1.0, 1.0),
    "param_high": (2.5, 8.0),
    "b_over_hopf": 0.8,
    "bands": ("hopf",),
    "init_spread": 0.5,
    "above_hopf_share": 0.5,
    "measurement": "mean",
    "n_components": 2,
}


def hopf_config(cfg: Config, measurement: str = "mean") -> Config:
    """cfg in the official Hopf setting (HOPF_SETTING), fitted with `measurement`."""
    n_components = 2 if measurement == "mean" else cfg.n_components
    chosen = {
        "measurement": measurement,
        "n_components": n_components,
        "sweep_a": cfg.hopf_sweep_a,
        "n_frames": cfg.hopf_steps + 1,
        "euler_steps": cfg.hopf_steps,
    }
    return dataclasses.replace(cfg, **(HOPF_SETTING | chosen))


def gray_scott_config(cfg: Config) -> Config:
    """cfg with the Gray-Scott system, parameter box, diffusion and solver of the official code."""
    return dataclasses.replace(cfg, **GRAY_SCOTT)


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # The smallest CPU scale where the effects are expected: a 32x32 grid with quick's spacing
    # dx = 2 (a 64-unit domain, about 8 pattern wavelengths; at dx = 1 explicit Euler with
    # dt = 0.025 blew up at A = 2.44, B = 7.7), twice the training trajectories, 400 Adam steps,
    # four seeds,
    # the official frame spacing in the Hopf setting (100 steps over T = 20), a finer sweep and
    # the Fourier ablation. About 30 minutes on 2 cores (README, Scaling up).
    "paper": Config(
        name="paper",
        out="runs/paper",
        seeds=(0, 1, 2, 3),
        grid=32,
        n_train=192,
        n_test=64,
        epochs=400,
        sweep_points=41,
        hopf_steps=100,
        hopf_seeds=(4, 5, 6, 7),
        ablations=("mean", "fourier"),
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
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
        tune_lr=(1e-4, 3e-4, 1e-3),
        tune_sindy_threshold=(0.05, 0.5, 2.0),
        sweep_points=61,
        hopf_steps=100,
        hopf_measurements=("mean", "scattering"),
        ablations=("mean", "fourier", "scattering-periodic"),
        gray_scott_study=True,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged.
    Single-field bounds stand beside the fields (check_bounds); the checks here involve several
    fields or a set of names."""
    check_bounds(cfg)
    if cfg.system not in REACTIONS:
        raise ValueError(f"system must be one of {sorted(REACTIONS)}, got {cfg.system!r}")
    if cfg.measurement not in MEASUREMENTS:
        raise ValueError(
            f"measurement must be one of {sorted(MEASUREMENTS)}, got {cfg.measurement!r}"
        )
    limit = stability_limit(cfg.dx, cfg.diffusion)
    if not cfg.dt < limit:
        raise ValueError(
            f"dt={cfg.dt} is unstable: explicit Euler needs 0 < dt < dx^2/(4 max D) = {limit:.5g}"
        )
    if cfg.euler_steps % (cfg.n_frames - 1):
        raise ValueError(
            f"euler_steps={cfg.euler_steps} must be a multiple of n_frames-1={cfg.n_frames - 1}"
        )
    if round(cfg.n_train * cfg.val_fraction) < 1:
        raise ValueError(
            f"val_fraction={cfg.val_fraction} must leave at least one validation trajectory out "
            f"of n_train={cfg.n_train}"
        )
    bad = [b for b in cfg.bands if b not in ("turing", "hopf")]
    if bad:
        raise ValueError(f"bands must name turing and/or hopf, got {cfg.bands!r}")
    if any(k > cfg.n_components for k in cfg.tune_sindy_components):
        raise ValueError(
            f"tune_sindy_components must lie in 0..n_components={cfg.n_components}, got "
            f"{cfg.tune_sindy_components}"
        )
    for name in (*cfg.hopf_measurements, *cfg.ablations):
        if name not in MEASUREMENTS:
            raise ValueError(
                f"hopf_measurements/ablations: {name!r} is not one of {sorted(MEASUREMENTS)}"
            )
    return cfg
