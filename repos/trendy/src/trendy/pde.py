"""Reaction-diffusion PDEs on a periodic grid (paper Sec. 4: Brusselator and Gray-Scott).

`du/dt = D_u lap(u) + f(u, v; theta)`, `dv/dt = D_v lap(v) + g(u, v; theta)`, integrated with
explicit Euler on a 5-point periodic Laplacian (the official code's `PDE.run`), vectorised over a
batch of parameters. Closed forms (steady state, Jacobian, Hopf and Turing lines, dispersion
relation) are what the tests and the bifurcation claim compare against.
"""

from __future__ import annotations

import math

import torch


def laplacian(x: torch.Tensor, dx: float) -> torch.Tensor:
    """Periodic 5-point Laplacian over the last two axes."""
    return (x.roll(1, -1) + x.roll(-1, -1) + x.roll(1, -2) + x.roll(-1, -2) - 4.0 * x) / dx**2


def brusselator_reaction(u, v, a, b):
    """Brusselator kinetics: f = A - (B+1) u + u^2 v, g = B u - u^2 v."""
    u2v = u * u * v
    return a - (b + 1.0) * u + u2v, b * u - u2v


def gray_scott_reaction(u, v, feed, kill):
    """Gray-Scott kinetics: f = -u v^2 + F (1-u), g = u v^2 - (F+k) v."""
    uv2 = u * v * v
    return -uv2 + feed * (1.0 - u), uv2 - (feed + kill) * v


REACTIONS = {"brusselator": brusselator_reaction, "gray-scott": gray_scott_reaction}


def homogeneous_state(system: str, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Homogeneous steady state: (A, B/A) for the Brusselator, (1, 0) for Gray-Scott."""
    if system == "brusselator":
        return theta[:, 0], theta[:, 1] / theta[:, 0]
    return torch.ones_like(theta[:, 0]), torch.zeros_like(theta[:, 0])


def stability_limit(dx: float, diffusion: tuple[float, float]) -> float:
    """Largest stable explicit-Euler step for the diffusion part: dx^2 / (4 max D)."""
    return dx**2 / (4.0 * max(diffusion))


def check_step(dt: float, dx: float, diffusion: tuple[float, float]) -> None:
    """Raise ValueError when dt breaks the explicit-Euler stability limit."""
    limit = stability_limit(dx, diffusion)
    if not dt < limit:
        raise ValueError(
            f"time step dt={dt} is unstable for explicit Euler with dx={dx} and "
            f"D={diffusion}: need dt < dx^2/(4 max D) = {limit:.5g}"
        )


def simulate(
    system: str,
    theta: torch.Tensor,
    u0: torch.Tensor,
    v0: torch.Tensor,
    *,
    diffusion: tuple[float, float],
    dx: float,
    dt: float,
    t_end: float,
    n_frames: int,
) -> torch.Tensor:
    """Explicit-Euler trajectories, shape (batch, n_frames, 2, n, n); frame 0 is (u0, v0)."""
    check_step(dt, dx, diffusion)
    n_steps = round(t_end / dt)
    if n_steps % (n_frames - 1):
        raise ValueError(
            f"t_end/dt = {n_steps} steps must be a multiple of n_frames-1 = {n_frames - 1}"
        )
    stride = n_steps // (n_frames - 1)
    reaction = REACTIONS[system]
    p, q = theta[:, 0, None, None], theta[:, 1, None, None]
    u, v = u0.clone(), v0.clone()
    frames = [torch.stack([u, v], 1)]
    for step in range(1, n_steps + 1):
        fu, fv = reaction(u, v, p, q)
        u, v = (
            u + dt * (diffusion[0] * laplacian(u, dx) + fu),
            v + dt * (diffusion[1] * laplacian(v, dx) + fv),
        )
        if step % stride == 0:
            frames.append(torch.stack([u, v], 1))
    out = torch.stack(frames, 1)
    if not torch.isfinite(out).all():
        bad = (~torch.isfinite(out)).flatten(1).any(1).nonzero().flatten().tolist()
        raise ValueError(
            f"simulation produced NaN/inf for parameters {theta[bad[:3]].tolist()}: "
            f"lower dt (now {dt}) or narrow the parameter range"
        )
    return out


def brusselator_jacobian(a: float, b: float) -> torch.Tensor:
    """Reaction Jacobian at the homogeneous state (A, B/A): [[B-1, A^2], [-B, -A^2]]."""
    return torch.tensor([[b - 1.0, a * a], [-b, -a * a]], dtype=torch.float64)


def hopf_line(a):
    """Hopf bifurcation of the Brusselator: trace of the Jacobian vanishes at B = 1 + A^2."""
    return 1.0 + a * a


def turing_line(a, diffusion: tuple[float, float]):
    """Turing onset of the Brusselator: B_T = (1 + A sqrt(D_u/D_v))^2."""
    return (1.0 + a * math.sqrt(diffusion[0] / diffusion[1])) ** 2


def growth_rate(a: float, b: float, k2: float, diffusion: tuple[float, float]) -> float:
    """Dispersion relation: largest real part of eig(J - k^2 diag(D)) for wavenumber^2 k2."""
    m = brusselator_jacobian(a, b) - k2 * torch.diag(torch.tensor(diffusion, dtype=torch.float64))
    return float(torch.linalg.eigvals(m).real.max())


def regime(a: float, b: float, diffusion: tuple[float, float]) -> int:
    """Closed-form linear regime: 0 homogeneous, 1 Turing pattern, 2 oscillation (Hopf)."""
    if b > hopf_line(a):
        return 2
    return int(b > turing_line(a, diffusion))
