"""Toy NeRF: volume rendering along rays and a SIREN radiance field whose sample is a ray.

The view-synthesis setting of MCL-NF (the paper's MatrixCity experiment, FIM-NeRF) at toy scale.
A ray is 8 numbers: origin (3), unit direction (3), near and far bounds. It is sampled at the
midpoints of `samples` equal bins between near and far (deterministic stratified quadrature),
and the rendered pixel is the alpha-composited colour of Mildenhall et al. (2020), Eq. 3:

    C(r) = sum_s T_s (1 - exp(-sigma_s delta)) c_s + T_{S+1} c_bg,
    T_s = exp(-sum_{j<s} sigma_j delta).

The ground truth (`data.render_scenes`) and the model (`NerfField`) use this same quadrature, so
the model could match the targets exactly. A NerfField is a `modular.Siren` 3 -> h -> h -> 4
(density and RGB at a 3-D point) with `lift` (ray -> its points) and `reduce` (points -> pixel),
so every routine of `modular` (vmapped modules, MAML, per-sample Fisher trace, FIM loss) and the
baselines work on rays unchanged: the FIM weights are per ray, the rendered pixel being the sample.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .modular import Siren

BACKGROUND = 1.0
"""Colour seen by rays that leave the scene (white, as in the NeRF synthetic scenes)."""
DENSITY = 100.0
"""A field output of 1 (above the 0.5 offset) means density DENSITY / (far - near)."""


def ray_points(rays: torch.Tensor, samples: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rays (..., 8) -> points (..., samples, 3) at the bin midpoints and the bin length (...)."""
    origin, direction, near, far = rays[..., :3], rays[..., 3:6], rays[..., 6], rays[..., 7]
    delta = (far - near) / samples
    mid = (torch.arange(samples, dtype=rays.dtype, device=rays.device) + 0.5) / samples
    t = near[..., None] + (far - near)[..., None] * mid
    return origin[..., None, :] + t[..., None] * direction[..., None, :], delta


def composite(sigma: torch.Tensor, rgb: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """Alpha compositing (Eq. 3 above): sigma (..., S), rgb (..., S, 3), delta (...) -> (..., 3)."""
    tau = sigma * delta[..., None]
    trans = torch.exp(-(torch.cumsum(tau, -1) - tau))  # T_s, exclusive of bin s
    weights = trans * (1 - torch.exp(-tau))
    background = torch.exp(-tau.sum(-1))[..., None] * BACKGROUND
    return (weights[..., None] * rgb).sum(-2) + background


class NerfField(Siren):
    """A radiance field f(x) = (sigma(x), c(x)) rendered along rays: 3 -> h -> h -> 4 SIREN.

    sigma = DENSITY / (far - near) * softplus(10 z) / 10 with z the density output less its 0.5
    offset (smooth ReLU: density 0 in empty space); colour = the RGB outputs, as for images."""

    def __init__(
        self, hidden: int, omega0: float, in_dim: int = 3, out_dim: int = 4, samples: int = 32
    ):
        if (in_dim, out_dim) != (3, 4):
            raise ValueError(
                f"a NeRF field maps 3-D points to (sigma, RGB), got {in_dim}->{out_dim}"
            )
        super().__init__(hidden, omega0, in_dim, out_dim)
        self.group = samples

    def lift(self, rays: torch.Tensor) -> torch.Tensor:
        """Rays (..., m, 8) -> their points (..., m * samples, 3)."""
        return ray_points(rays, self.group)[0].flatten(-3, -2)

    def reduce(self, out: torch.Tensor, rays: torch.Tensor) -> torch.Tensor:
        """Point outputs (..., m * samples, 4) -> rendered pixels (..., m, 3)."""
        out = out.unflatten(-2, (-1, self.group))
        delta = (rays[..., 7] - rays[..., 6]) / self.group
        z = out[..., 0] - 0.5
        sigma = DENSITY / (delta[..., None] * self.group) * F.softplus(10 * z) / 10
        return composite(sigma, out[..., 1:], delta)
