"""Measurements Phi: fields (..., H, W) -> a few spatially averaged coefficients (paper Sec. 3.1).

`kymatio_scattering` is the paper's measurement: kymatio's `Scattering2D` (J scales, L
orientations, order 2; reflection padding, low-pass phi and subsampling by 2^J), averaged over
the remaining spatial positions, as the official `_measurements.Scattering` does. It is the
`scattering` measurement. `averaged_scattering` is our earlier transform: the same Morlet bank
applied on the periodic grid itself (no padding) and averaged over space instead of low-passed,
exactly invariant to circular shifts and with zeroth order exactly the mean; it is kept as the
`scattering-periodic` ablation and differs from kymatio's by several percent (the benchmark's
performance row measures by how much). The baselines' measurements (`mean_measurement`,
`fourier_power`) live here too, with the same interface.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch


def _gabor(n: int, sigma: float, theta: float, xi: float, slant: float) -> np.ndarray:
    """Gabor filter in space, periodised over 5x5 copies of the n x n grid (kymatio's design)."""
    rot = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
    curv = rot @ np.diag([1.0, slant * slant]) @ rot.T / (2.0 * sigma * sigma)
    out = np.zeros((n, n), complex)
    base = np.arange(n)
    for ex in range(-2, 3):
        for ey in range(-2, 3):
            xx, yy = np.meshgrid(base + ex * n, base + ey * n, indexing="ij")
            quad = curv[0, 0] * xx * xx + 2 * curv[0, 1] * xx * yy + curv[1, 1] * yy * yy
            phase = xi * (xx * math.cos(theta) + yy * math.sin(theta))
            out += np.exp(-quad + 1j * phase)
    return out / (2.0 * math.pi * sigma * sigma / slant)


@lru_cache(maxsize=8)
def morlet_bank(n: int, J: int, L: int) -> torch.Tensor:
    """Fourier transforms of the J*L Morlet wavelets psi_{j,l} (zero mean), shape (J*L, n, n).

    psi = gabor(sigma=0.8 2^j, theta=(L/2-1-l) pi/L, xi=3pi/(4 2^j), slant=4/L) - K gabor(xi=0),
    with K chosen so that psi has zero mean; the transforms are real (the filters are even).
    """
    bank = []
    for j in range(J):
        for ell in range(L):
            args = (0.8 * 2**j, (L // 2 - 1 - ell) * math.pi / L)
            wave = _gabor(n, *args, 3.0 * math.pi / (4 * 2**j), 4.0 / L)
            envelope = _gabor(n, *args, 0.0, 4.0 / L)
            psi = wave - wave.sum() / envelope.sum() * envelope
            bank.append(np.fft.fft2(psi).real)
    return torch.tensor(np.stack(bank), dtype=torch.float32)


def path_scales(J: int, L: int) -> list[tuple[int, int]]:
    """Second-order paths (lambda1, lambda2) with j2 > j1, in kymatio's output order."""
    lam = [(j, ell) for j in range(J) for ell in range(L)]
    return [(i1, i2) for i1 in range(len(lam)) for i2 in range(len(lam)) if lam[i2][0] > lam[i1][0]]


def check_finite(x: torch.Tensor) -> None:
    """Raise ValueError on NaN or inf fields, naming how many values are bad."""
    bad = int((~torch.isfinite(x)).sum())
    if bad:
        raise ValueError(f"field contains {bad} NaN/inf values; expected finite numbers")


def averaged_scattering(x: torch.Tensor, J: int = 2, L: int = 8) -> torch.Tensor:
    """Spatially averaged scattering S = (<x>, <|x*psi1|>, <||x*psi1|*psi2|>), shape (..., K).

    K = 1 + JL + L^2 J(J-1)/2 (81 for J=2, L=8): order 0, order 1, order 2 (paper Eq. 2).
    """
    check_finite(x)
    n = x.shape[-1]
    psi = morlet_bank(n, J, L).to(x.device)
    lead = x.shape[:-2]
    x = x.reshape(-1, n, n).float()
    xf = torch.fft.fft2(x)
    u1 = torch.fft.ifft2(xf[:, None] * psi).abs()  # (B, JL, n, n)
    s1 = u1.mean((-1, -2))
    pairs = path_scales(J, L)
    first = torch.tensor([p[0] for p in pairs], device=x.device)
    second = torch.tensor([p[1] for p in pairs], device=x.device)
    u1f = torch.fft.fft2(u1)
    s2 = torch.fft.ifft2(u1f[:, first] * psi[second]).abs().mean((-1, -2))
    out = torch.cat([x.mean((-1, -2))[:, None], s1, s2], 1)
    return out.reshape(*lead, out.shape[-1])


def littlewood_paley_bound(n: int, J: int = 2, L: int = 8) -> float:
    """max over frequencies of sum_lambda |psi_hat_lambda|^2: the frame bound of the bank."""
    return float((morlet_bank(n, J, L) ** 2).sum(0).max())


def mean_measurement(x: torch.Tensor) -> torch.Tensor:
    """Spatial mean only (blind to patterns): shape (..., 1)."""
    check_finite(x)
    return x.mean((-1, -2))[..., None]


def fourier_power(x: torch.Tensor, n_bins: int = 8) -> torch.Tensor:
    """Mean plus radially binned Fourier power spectrum, shape (..., 1 + n_bins)."""
    check_finite(x)
    n = x.shape[-1]
    k = torch.fft.fftfreq(n, device=x.device)
    radius = (k[:, None] ** 2 + k[None, :] ** 2).sqrt()
    edges = torch.linspace(0, 0.5 * math.sqrt(2), n_bins + 1, device=x.device)
    bins = torch.bucketize(radius, edges[1:-1])
    power = torch.fft.fft2(x.float()).abs().pow(2) / n**4
    flat = power.flatten(-2)
    onehot = torch.nn.functional.one_hot(bins.flatten(), n_bins).float()
    onehot[0, 0] = 0.0  # drop the mean from the power so it is not counted twice
    spectrum = flat @ onehot
    return torch.cat([x.mean((-1, -2))[..., None], spectrum.sqrt()], -1)


@lru_cache(maxsize=16)
def _kymatio_operator(shape: tuple[int, int], J: int, L: int, device: str):
    # The package root imports its 3-D module, which needs scipy.special.sph_harm (removed in
    # SciPy 1.17); the 2-D torch frontend imports on its own.
    from kymatio.scattering2d.frontend.torch_frontend import ScatteringTorch2D

    return ScatteringTorch2D(J=J, shape=shape, L=L, max_order=2).to(device)


def kymatio_scattering(x: torch.Tensor, J: int = 2, L: int = 8) -> torch.Tensor:
    """kymatio's Scattering2D averaged over its output positions, shape (..., K): the paper's
    measurement (K = 1 + JL + L^2 J(J-1)/2, 81 for J=2, L=8, in kymatio's path order)."""
    check_finite(x)
    height, width = x.shape[-2:]
    if min(height, width) < 2**J:
        raise ValueError(f"fields of {height}x{width} are too small for J={J}: need >= {2**J}")
    op = _kymatio_operator((height, width), J, L, str(x.device))
    lead = x.shape[:-2]
    out = op(x.reshape(-1, height, width).float().contiguous()).mean((-1, -2))
    return out.reshape(*lead, out.shape[-1])


def pattern_features(measurement: str, J: int, L: int, n_bins: int = 8) -> list[int]:
    """Indices, within one channel's block of features, of the coefficients that vanish on a
    homogeneous field and grow with a spatial pattern: first-order scattering |x * psi| (zero-
    mean wavelets), or the Fourier power bins. The mean-only measurement has none."""
    if measurement in ("scattering", "scattering-periodic"):
        return list(range(1, 1 + J * L))
    if measurement == "fourier":
        return list(range(1, 1 + n_bins))
    return []


MEASUREMENTS = {
    "scattering": kymatio_scattering,
    "scattering-periodic": averaged_scattering,
    "mean": mean_measurement,
    "fourier": fourier_power,
}
