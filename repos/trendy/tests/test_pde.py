"""The PDE solver against its closed forms, and its bad-input errors."""

from __future__ import annotations

import math

import pytest
import torch

from trendy import pde

DIFF = (1.0, 8.0)


def test_homogeneous_state_has_zero_time_derivative():
    theta = torch.tensor([[1.7, 2.3], [2.4, 6.0]], dtype=torch.float64)
    u, v = pde.homogeneous_state("brusselator", theta)
    fu, fv = pde.brusselator_reaction(u, v, theta[:, 0], theta[:, 1])
    assert fu.abs().max() < 1e-12 and fv.abs().max() < 1e-12
    field = u[:, None, None].expand(2, 8, 8)
    assert pde.laplacian(field, 1.0).abs().max() < 1e-12


def test_jacobian_matches_finite_differences_and_hopf_condition():
    a, b, eps = 1.8, 3.0, 1e-6
    u, v = torch.tensor(a, dtype=torch.float64), torch.tensor(b / a, dtype=torch.float64)
    cols = []
    for du, dv in ((eps, 0.0), (0.0, eps)):
        plus = torch.stack(pde.brusselator_reaction(u + du, v + dv, a, b))
        minus = torch.stack(pde.brusselator_reaction(u - du, v - dv, a, b))
        cols.append((plus - minus) / (2 * eps))
    assert torch.allclose(torch.stack(cols, 1), pde.brusselator_jacobian(a, b), atol=1e-6)
    on_line = torch.linalg.eigvals(pde.brusselator_jacobian(a, pde.hopf_line(a)))
    assert on_line.real.abs().max() < 1e-12 and on_line.imag.abs().max() > 0.1
    assert torch.linalg.eigvals(pde.brusselator_jacobian(a, pde.hopf_line(a) + 0.1)).real.max() > 0


def test_turing_line_is_where_the_dispersion_relation_touches_zero():
    a = 2.0
    k2 = torch.linspace(0.01, 3.0, 600).tolist()
    b_t = pde.turing_line(a, DIFF)
    below = max(pde.growth_rate(a, b_t - 0.05, q, DIFF) for q in k2)
    above = max(pde.growth_rate(a, b_t + 0.05, q, DIFF) for q in k2)
    assert below < 0 < above
    assert pde.regime(a, b_t - 0.05, DIFF) == 0 and pde.regime(a, b_t + 0.05, DIFF) == 1


def test_small_fourier_mode_grows_at_the_analytic_rate():
    a, b, n, dx, dt, t_end = 2.0, 3.5, 16, 2.0, 0.01, 2.0
    k = 2 * math.pi * 4 / (n * dx)
    # The 5-point Laplacian's symbol replaces k^2 for a mode on the grid.
    k2 = (4 / dx**2) * math.sin(k * dx / 2) ** 2
    m = pde.brusselator_jacobian(a, b) - k2 * torch.diag(torch.tensor(DIFF, dtype=torch.float64))
    vals, vecs = torch.linalg.eig(m)
    i = int(vals.real.argmax())
    vec, rate = vecs[:, i].real, float(vals.real[i])
    wave = torch.cos(k * dx * torch.arange(n, dtype=torch.float64))[None, :, None].expand(1, n, n)
    eps = 1e-6
    u0 = a + eps * vec[0] * wave
    v0 = b / a + eps * vec[1] * wave
    theta = torch.tensor([[a, b]], dtype=torch.float64)
    traj = pde.simulate(
        "brusselator", theta, u0, v0, diffusion=DIFF, dx=dx, dt=dt, t_end=t_end, n_frames=2
    )
    amp = float((traj[0, -1, 0] - a).abs().max()) / float((u0[0] - a).abs().max())
    assert rate > 0
    assert abs(math.log(amp) / t_end - rate) < 0.02 * rate + 1e-3


def test_unstable_time_step_reports_the_limit():
    theta = torch.tensor([[2.0, 3.0]])
    u0 = torch.full((1, 4, 4), 2.0)
    with pytest.raises(ValueError, match=r"dt < dx\^2/\(4 max D\) = 0.125"):
        pde.simulate(
            "brusselator", theta, u0, u0, diffusion=DIFF, dx=2.0, dt=0.2, t_end=1.0, n_frames=2
        )


def test_gray_scott_trivial_state_is_steady():
    theta = torch.tensor([[0.04, 0.06]])
    u, v = pde.homogeneous_state("gray-scott", theta)
    fu, fv = pde.gray_scott_reaction(u, v, theta[:, 0], theta[:, 1])
    assert float(fu.abs().max()) == 0.0 and float(fv.abs().max()) == 0.0


def _grown(a, b, u0, v0, t_end, diffusion=DIFF, dx=2.0, dt=0.025):
    """Final over initial size of the perturbation around (A, B/A), float64."""
    theta = torch.tensor([[a, b]], dtype=torch.float64)
    traj = pde.simulate(
        "brusselator", theta, u0, v0, diffusion=diffusion, dx=dx, dt=dt, t_end=t_end, n_frames=2
    )
    size = [float((traj[0, i, 0] - a).pow(2).mean().sqrt()) for i in (0, -1)]
    return size[1] / size[0]


@pytest.mark.parametrize("a", [1.6, 2.4])
def test_simulated_turing_onset_is_the_closed_form_one(a):
    """Audit: on the quick preset's grid (16x16, dx=2, D=(1, 8)) a small random perturbation
    decays 5% below (1 + A sqrt(D_u/D_v))^2 and grows 5% above it."""
    gen = torch.Generator().manual_seed(0)
    noise = 1e-4 * torch.randn(1, 16, 16, generator=gen, dtype=torch.float64)
    b_t = pde.turing_line(a, DIFF)
    below = _grown(a, 0.95 * b_t, a + noise, b_t * 0.95 / a + noise, 100.0)
    above = _grown(a, 1.05 * b_t, a + noise, b_t * 1.05 / a + noise, 100.0)
    assert below < 0.5 and above > 2.0


def test_simulated_hopf_line_is_one_plus_a_squared():
    """Audit: a uniform perturbation (the well-mixed Brusselator) decays 5% below B = 1 + A^2 and
    grows 5% above it in the simulator."""
    a = 2.0
    rates = []
    for b in (0.95 * pde.hopf_line(a), 1.05 * pde.hopf_line(a)):
        u0 = torch.full((1, 4, 4), a + 1e-4, dtype=torch.float64)
        v0 = torch.full((1, 4, 4), b / a, dtype=torch.float64)
        rates.append(_grown(a, b, u0, v0, 50.0))
    assert rates[0] < 0.1 and rates[1] > 10.0


def test_gray_scott_nontrivial_homogeneous_state_is_simulated_as_steady():
    """The patterned-branch state: u v = F + k and F (1 - u) = (F + k) v, so u - u^2 = (F+k)^2 / F."""
    feed, kill = 0.05, 0.03
    c = feed + kill
    u = (1 + math.sqrt(1 - 4 * c * c / feed)) / 2
    v = c / u
    fu, fv = pde.gray_scott_reaction(
        torch.tensor(u, dtype=torch.float64), torch.tensor(v, dtype=torch.float64), feed, kill
    )
    assert abs(float(fu)) < 1e-12 and abs(float(fv)) < 1e-12
    theta = torch.tensor([[feed, kill]], dtype=torch.float64)
    u0 = torch.full((1, 8, 8), u, dtype=torch.float64)
    traj = pde.simulate(
        "gray-scott",
        theta,
        u0,
        torch.full_like(u0, v),
        diffusion=(0.1, 0.05),
        dx=1.0,
        dt=1.0,
        t_end=50.0,
        n_frames=2,
    )
    assert float((traj[0, -1, 0] - u).abs().max()) < 1e-10
    assert float((traj[0, -1, 1] - v).abs().max()) < 1e-10
