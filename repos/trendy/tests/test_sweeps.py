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
