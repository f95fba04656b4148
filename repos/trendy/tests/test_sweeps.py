"""The bifurcation readouts end to end on models whose lines are known."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from trendy import bifurcation, data, node, pde, sweeps
from trendy.config import PRESETS, hopf_config


class KnownBrusselator(torch.nn.Module):
    """The well-mixed Brusselator in the reduced coordinates s = R ((<u>, <v>) - m) / sd of a
    Reducer, time rescaled by t_end as in training, and written as the field g whose Euler step
    h reproduces the exact flow map, g = (flow_h(s) - s) / h: what a neural ODE trained through
    Euler steps of size h on exact trajectories converges to."""

    def __init__(self, reducer: node.Reducer, t_end: float, h: float):
        super().__init__()
        self.r = torch.tensor(reducer.components, dtype=torch.float32)
        self.m = torch.tensor(reducer.mean, dtype=torch.float32)
        self.sd = torch.tensor(reducer.std, dtype=torch.float32)
        self.pca_mean = torch.tensor(reducer.center, dtype=torch.float32)
        self.t_end, self.h = t_end, h
        self.register_buffer("theta_box", torch.tensor([[0.5, 0.5], [3.0, 9.0]]))

    def exact(self, s, theta):
        x = self.m + self.sd * (s @ self.r + self.pca_mean)
        fu, fv = pde.brusselator_reaction(x[..., 0], x[..., 1], theta[..., 0], theta[..., 1])
        return self.t_end * (torch.stack([fu, fv], -1) / self.sd) @ self.r.T

    def field(self, s, theta):
        x, dt = s, self.h / 20
        for _ in range(20):  # RK4 of the exact field over one Euler step of the neural ODE
            k1 = self.exact(x, theta)
            k2 = self.exact(x + dt / 2 * k1, theta)
            k3 = self.exact(x + dt / 2 * k2, theta)
            k4 = self.exact(x + dt * k3, theta)
            x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return (x - s) / self.h


def test_hopf_readout_finds_one_plus_a_squared_on_the_true_field():
    cfg = dataclasses.replace(hopf_config(PRESETS["quick"]), sweep_points=41, grid=8)
    gen = torch.Generator().manual_seed(0)
    x = torch.tensor([[1.5, 3.0], [2.0, 2.5], [1.0, 1.0]]) + 0.3 * torch.randn(3, 2, generator=gen)
    reducer = node.Reducer(x[None], 2)
    model = KnownBrusselator(reducer, cfg.t_end, 1.0 / cfg.euler_steps)
    rows = sweeps.hopf_sweep(cfg, model, reducer)
    for row in rows:
        assert abs(row["pred"] - row["true"]) < 0.02 * row["true"], row


def test_turing_readout_on_the_pde_itself_finds_the_closed_form_onset():
    """The growth readout, end to end (measure -> reduce -> roll out -> decode -> crossing), on
    the simulator, whose onset is (1 + A sqrt(Du/Dv))^2 (quick grid, T = 50)."""
    cfg = dataclasses.replace(PRESETS["quick"], sweep_a=(2.0,), sweep_points=41, sweep_repeats=2)
    gen = torch.Generator().manual_seed(0)
    theta = torch.tensor([[2.0, b] for b in (2.0, 2.6, 3.0, 3.5, 4.0, 4.5, 5.5)])
    traj = data.simulate_batch(dataclasses.replace(cfg, n_frames=5), theta, gen)
    reducer = node.Reducer(sweeps.measure(cfg, traj), 6)
    (row,) = sweeps.turing_sweep(cfg, reducer, sweeps.pde_rollout(cfg, reducer))
    assert abs(row["pred"] - row["true"]) < 0.05 * row["true"], row
    # the mean-only measurement carries no pattern coefficient: no onset, a 100% miss
    mean_cfg = dataclasses.replace(cfg, measurement="mean")
    mean_red = node.Reducer(sweeps.measure(mean_cfg, traj), 2)
    (row,) = sweeps.turing_sweep(mean_cfg, mean_red, sweeps.pde_rollout(mean_cfg, mean_red))
    assert np.isnan(row["pred"]) and bifurcation.relative_error(row["pred"], row["true"]) == 1.0


def test_pattern_growth_averages_repeats_and_crosses_where_the_amplitude_grows():
    b = np.linspace(1.0, 3.0, 5)
    start = np.ones(10)
    end = np.repeat(np.exp(b - 2.25), 2)  # grows for b > 2.25
    growth = bifurcation.pattern_growth(start, end, 2)
    assert growth.shape == (5,)
    assert abs(bifurcation.first_crossing(b, growth) - 2.25) < 0.1


class LevelReducer:
    """Stand-in reducer for the mean measurement: reduced state (1, <v>), so the state carries
    B / A exactly as the Turing data's homogeneous start (A, B/A) does."""

    def __call__(self, feats):
        return torch.stack([torch.ones_like(feats[..., 1]), feats[..., 1]], -1)


def reads(source: str, line: float):
    """A rollout whose pattern (coordinate 0) grows past `line` of B, read from theta's B
    ("theta") or from the initial state's level <v> times A ("state")."""

    def rollout(s0, theta, u0, v0):
        b = theta[:, 1] if source == "theta" else s0[:, 1] * theta[:, 0]
        return torch.stack([torch.where(b > line, 2.0, 0.5), s0[:, 1]], -1)

    return rollout


def test_fixed_theta_and_fixed_state_controls_tell_which_input_gives_the_onset(monkeypatch):
    """The issue's point 1: holding theta fixed breaks the onset of a model that reads theta and
    leaves that of a model that reads the state; holding the state fixed does the opposite."""
    monkeypatch.setattr(sweeps, "pattern_amplitude", lambda cfg, reducer, s: s[:, 0].numpy())
    cfg = dataclasses.replace(
        PRESETS["quick"], measurement="mean", sweep_a=(2.0,), sweep_points=41, grid=8
    )
    line = pde.turing_line(2.0, cfg.diffusion)
    assert cfg.init_spread > 0  # the data's spread; the sweep itself starts at the steady state

    def err(source, fix):
        (row,) = sweeps.turing_sweep(cfg, LevelReducer(), reads(source, line), fix)
        return bifurcation.relative_error(row["pred"], line)

    gen = torch.Generator().manual_seed(0)
    _, u0, v0, _ = sweeps._perturbed_states(cfg, LevelReducer(), 2.0, np.array([3.0, 4.0]), gen)
    levels = torch.stack([u0.mean((-1, -2)), v0.mean((-1, -2))], 1)
    want = torch.tensor([[2.0, 1.5]] * 4 + [[2.0, 2.0]] * 4)
    assert torch.allclose(levels, want, atol=0.05)  # at the steady state, not the data's spread
    assert err("theta", None) < 0.03 and err("state", None) < 0.03
    assert err("theta", "theta") > 0.15 and err("theta", "state") < 0.03
    assert err("state", "theta") < 0.03 and err("state", "state") > 0.15
