"""Sweeps that locate the Brusselator's bifurcation lines with a fitted model (paper Sec. 4.2).

For each A in cfg.sweep_a, B runs from the box's lowest B to 1 + A^2 + b_over_hopf:
- `hopf_sweep`: Jacobian of g_pi at the measured equilibrium (A, B/A), complex-pair growth rate
  under the trained Euler step (the official `plot_hopf_manifold.py` reads the same Jacobian).
- `turing_sweep`: perturbed homogeneous states are measured, rolled out over [0, 1] by `rollout`
  (the neural ODE, or the PDE itself for the oracle row), and the growth of the decoded pattern
  amplitude marks the onset.
- `turing_jacobian_sweep`: a real eigenvalue of d g_pi / d S at the perturbed homogeneous state
  turning positive (reported: its reading is degenerate, see the README).
The readouts are pure functions of the model; `measure` is the measurement shared with training.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import torch

from . import bifurcation, data, node, pde
from .scattering import MEASUREMENTS, pattern_features

Rollout = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def measure(cfg, fields: torch.Tensor, chunk: int = 512) -> torch.Tensor:
    """Phi applied per channel and frame: (batch, frames, C, H, W) -> (batch, frames, C K)."""
    fn = MEASUREMENTS[cfg.measurement]
    # Chunks of a few hundred 2-D stacks stay in cache: 2-3x faster on CPU than 4096.
    scat = cfg.measurement.startswith("scattering")
    kwargs = {"J": cfg.scattering_j, "L": cfg.scattering_l} if scat else {}
    flat = fields.reshape(-1, *fields.shape[-2:])
    feats = torch.cat(
        [fn(flat[i : i + chunk].to(cfg.device), **kwargs).cpu() for i in range(0, len(flat), chunk)]
    )
    return feats.reshape(*fields.shape[:2], -1)


def sweep_b(cfg, a: float) -> np.ndarray:
    """The B values swept at A: the box's lowest B up to b_over_hopf above the Hopf line."""
    return np.linspace(cfg.param_low[1], pde.hopf_line(a) + cfg.b_over_hopf, cfg.sweep_points)


def pattern_amplitude(cfg, reducer: node.Reducer, s: torch.Tensor) -> np.ndarray | None:
    """Sum of the first channel's pattern coefficients (`pattern_features`) decoded from reduced
    states s (batch, dim); None for a measurement that has none (mean-only)."""
    idx = pattern_features(cfg.measurement, cfg.scattering_j, cfg.scattering_l)
    if not idx:
        return None
    return reducer.inverse(s)[:, idx].sum(-1).double().numpy()


def node_rollout(cfg, model: node.ParamODE) -> Rollout:
    """Final reduced state of the neural ODE's trajectory over [0, 1]."""

    def rollout(s0, theta, u0, v0):
        device = model.theta_box.device
        pred = node.predict(model, s0.to(device), theta.to(device), cfg.euler_steps, cfg.n_frames)
        return pred[:, -1].cpu()

    return rollout


def pde_rollout(cfg, reducer: node.Reducer) -> Rollout:
    """Oracle: the PDE itself from the same initial fields, measured and reduced at t_end."""

    def rollout(s0, theta, u0, v0):
        one = dataclasses.replace(cfg, n_frames=2)
        traj = pde.simulate(
            cfg.system, theta.to(cfg.device), u0.to(cfg.device), v0.to(cfg.device),
            diffusion=cfg.diffusion, dx=cfg.dx, dt=cfg.dt, t_end=cfg.t_end, n_frames=2,
        ).cpu()  # fmt: skip
        return reducer(measure(one, traj[:, -1:]))[:, 0]

    return rollout


def fixed_b(cfg, a: float) -> float:
    """The B at which the fixed-theta and fixed-state controls hold the sweep: its midpoint."""
    b = sweep_b(cfg, a)
    return float((b[0] + b[-1]) / 2)


def _perturbed_states(cfg, reducer, a, b, gen, level_b=None):
    """Sweep inputs at A for each B: theta, perturbed homogeneous fields at the steady state
    (at level_b's steady state for every B when given) and their reduced measurement."""
    theta = torch.tensor([[a, bb] for bb in b for _ in range(cfg.sweep_repeats)]).float()
    level = theta if level_b is None else torch.full_like(theta, level_b).index_fill(1, ZERO, a)
    # the bifurcation readout starts at the steady state itself, whatever the data's spread
    u0, v0 = data.initial_fields(dataclasses.replace(cfg, init_spread=0.0), level, gen)
    s0 = reducer(measure(cfg, torch.stack([u0, v0], 1)[:, None]))[:, 0]
    return theta, u0, v0, s0


ZERO = torch.tensor([0])
FIXES = (None, "theta", "state")


def turing_sweep(cfg, reducer: node.Reducer, rollout: Rollout, fix: str | None = None):
    """Per A: the first B where the rolled-out pattern amplitude grows (nan if it never does).

    Controls (`fix`): "theta" rolls every B out with theta's B held at the sweep's midpoint
    (`fixed_b`), so an onset found then is read from the state; "state" starts every B from
    fields at the midpoint's steady state, so an onset found then is read from theta."""
    if fix not in FIXES:
        raise ValueError(f"fix must be one of {FIXES}, got {fix!r}")
    gen = torch.Generator().manual_seed(cfg.seed + 10_000)
    rows = []
    for a in cfg.sweep_a:
        b = sweep_b(cfg, a)
        level_b = fixed_b(cfg, a) if fix == "state" else None
        theta, u0, v0, s0 = _perturbed_states(cfg, reducer, a, b, gen, level_b)
        start = pattern_amplitude(cfg, reducer, s0)
        pred = float("nan")
        if start is not None:
            if fix == "theta":
                theta = theta.clone().index_fill(1, torch.tensor([1]), fixed_b(cfg, a))
            end = pattern_amplitude(cfg, reducer, rollout(s0, theta, u0, v0))
            growth = bifurcation.pattern_growth(start, end, cfg.sweep_repeats)
            pred = bifurcation.first_crossing(b, growth)
        rows.append({"a": a, "pred": pred, "true": pde.turing_line(a, cfg.diffusion)})
    return rows


def turing_jacobian_sweep(cfg, model: node.ParamODE, reducer: node.Reducer) -> list[dict]:
    """Per A: the first B where a real eigenvalue of d g_pi / d S at the perturbed homogeneous
    state turns positive (averaged over cfg.sweep_repeats perturbations)."""
    gen = torch.Generator().manual_seed(cfg.seed + 10_000)
    rows = []
    for a in cfg.sweep_a:
        b = sweep_b(cfg, a)
        theta, _, _, s0 = _perturbed_states(cfg, reducer, a, b, gen)
        eigs = node.jacobian_spectrum(model, s0.to(cfg.device), theta.to(cfg.device))
        real, _ = bifurcation.growth_indicators(eigs, 1.0 / cfg.euler_steps)
        real = real.reshape(len(b), cfg.sweep_repeats).mean(1)
        pred = bifurcation.first_crossing(b, real)
        rows.append({"a": a, "pred": pred, "true": pde.turing_line(a, cfg.diffusion)})
    return rows


def hopf_sweep(cfg, model: node.ParamODE, reducer: node.Reducer) -> list[dict]:
    """Per A: the first B where a complex pair of d g_pi / d S at the measured equilibrium
    (A, B/A) grows under the trained Euler step h = 1/euler_steps."""
    rows = []
    for a in cfg.sweep_a:
        b = sweep_b(cfg, a)
        theta = torch.tensor([[a, bb] for bb in b], dtype=torch.float32)
        u, v = pde.homogeneous_state(cfg.system, theta)
        flat = torch.stack([u, v], 1)[:, None, :, None, None].expand(-1, 1, 2, cfg.grid, cfg.grid)
        s_eq = reducer(measure(cfg, flat.contiguous()))[:, 0]
        eigs = node.jacobian_spectrum(model, s_eq.to(cfg.device), theta.to(cfg.device))
        _, cplx = bifurcation.growth_indicators(eigs, 1.0 / cfg.euler_steps)
        rows.append({"a": a, "pred": bifurcation.first_crossing(b, cplx), "true": pde.hopf_line(a)})
    return rows


def locate(cfg, model: node.ParamODE, reducer: node.Reducer) -> dict[str, list[dict]]:
    """The readouts of the lines named in cfg.bands, keyed turing, turing_jacobian, hopf."""
    out = {}
    if "turing" in cfg.bands:
        rollout = node_rollout(cfg, model)
        out["turing"] = turing_sweep(cfg, reducer, rollout)
        out["turing_jacobian"] = turing_jacobian_sweep(cfg, model, reducer)
        for fix in ("theta", "state"):
            out[f"turing_{fix}_fixed"] = turing_sweep(cfg, reducer, rollout, fix)
    if "hopf" in cfg.bands:
        out["hopf"] = hopf_sweep(cfg, model, reducer)
    return out
