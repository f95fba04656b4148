"""Kernel renormalisation (BPKR, the paper's fixed point, Eq. 4) of one-hidden-layer BNNs and its
Marchenko-Pastur integral form (the paper's integral estimator, Eq. 3, for isotropic inputs).

Notation: the renormalised kernel is u * Kb, where Kb is the base kernel whose NNGP limit is
s2 * Kb (Kb = K0 = s2 X X^T / N0 for linear nets, Kb = ReLU-NNGP / s2 for ReLU nets). P training
points, width N, alpha = P / N, temperature T.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import brentq

from .kernels import check_finite, check_positive, gp_predict


def spectrum(k_base: jax.Array, y: jax.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigenvalues lam of Kb, eigenvectors E, and the projections E^T Y (float64 numpy)."""
    check_finite("kernel", k_base)
    check_finite("targets", y)
    lam, vec = np.linalg.eigh(np.asarray(k_base, dtype=np.float64))
    lam = np.clip(lam, 0.0, None)
    return lam, vec, vec.T @ np.asarray(y, dtype=np.float64)


def bracket(residual, s2: float) -> tuple[float, float]:
    """A sign change of the fixed-point residual (negative as u -> 0, positive as u -> inf)."""
    lo, hi = s2, s2
    while residual(lo) > 0.0:
        lo /= 4.0
    while residual(hi) < 0.0:
        hi *= 4.0
    return lo, hi


def bpkr_residual(u: float, lam: np.ndarray, proj: np.ndarray, width: int, s2: float, t: float):
    """Residual of the BPKR fixed point (general T):

    u/s2 = 1 - (1/N) Tr[u Kb (u Kb + T)^-1] + (1/N) Y^T (u Kb + T)^-1 u Kb (u Kb + T)^-1 Y.
    """
    denom = u * lam + t
    trace = np.sum(u * lam / denom)
    quad = np.sum(proj**2 * u * lam / denom**2)
    return u / s2 - 1.0 + (trace - quad) / width


def bpkr_u(k_base: jax.Array, y: jax.Array, width: int, s2: float, temperature: float) -> float:
    """Solve the BPKR fixed point for the renormalisation u (Brent's method on a bracket)."""
    check_positive("prior variance s2", s2)
    check_positive("temperature", temperature)
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    lam, _, proj = spectrum(k_base, y)
    args = (lam, proj, width, s2, temperature)
    lo, hi = bracket(lambda u: bpkr_residual(u, *args), s2)
    return float(brentq(bpkr_residual, lo, hi, args=args, xtol=1e-14, rtol=1e-12))


def bpkr_u_zero_temperature(x: jax.Array, y: jax.Array, width: int, s2: float) -> float:
    """T -> 0 limit for linear nets: u/s2 = 1 - alpha + alpha r0 / u, r0 = Y^T K0^-1 Y / P.

    The positive root of the quadratic u^2/s2 - (1 - alpha) u - alpha r0 = 0.
    """
    check_positive("prior variance s2", s2)
    check_finite("inputs", x)
    check_finite("targets", y)
    p, n0 = x.shape
    if p > n0:
        raise ValueError(
            f"the T -> 0 formula needs an invertible K0, i.e. P <= N0; got P={p} > N0={n0}"
        )
    k0 = s2 * x @ x.T / n0
    r0 = float(y @ jnp.linalg.solve(k0, y)) / p
    alpha = p / width
    b = 1.0 - alpha
    return 0.5 * s2 * (b + np.sqrt(b * b + 4.0 * alpha * r0 / s2))


def renormalised_variance_ratio(
    k_train: jax.Array,
    k_cross: jax.Array,
    k_diag: jax.Array,
    y: jax.Array,
    u: float,
    s2: float,
    temperature: float,
) -> float:
    """Mean predictive variance with kernel u Kb over that of the NNGP (kernel s2 Kb)."""
    _, v_u = gp_predict(u * k_train, u * k_cross, u * k_diag, y, temperature)
    _, v_gp = gp_predict(s2 * k_train, s2 * k_cross, s2 * k_diag, y, temperature)
    return float(jnp.mean(v_u) / jnp.mean(v_gp))


def mp_stieltjes(z: float, ratio: float) -> float:
    """Stieltjes transform m(z) = int rho(l)/(l - z) of the Marchenko-Pastur law, z < 0.

    For A = Z Z^T / n with Z a p x n standard Gaussian matrix and ratio = p / n, m solves
    ratio z m^2 + (z - 1 + ratio) m + 1 = 0; the root in (0, 1/|z|] is the transform.
    """
    if not z < 0:
        raise ValueError(f"mp_stieltjes is evaluated at z < 0 here, got {z}")
    b = z - 1.0 + ratio
    disc = np.sqrt(b * b - 4.0 * ratio * z)
    roots = ((-b + disc) / (2.0 * ratio * z), (-b - disc) / (2.0 * ratio * z))
    return float(next(r for r in roots if 0.0 < r <= -1.0 / z * (1 + 1e-12)))


def mp_stieltjes_derivative(z: float, ratio: float) -> float:
    """dm/dz from the implicit quadratic: m' = -(ratio m^2 + m) / (2 ratio z m + z - 1 + ratio)."""
    m = mp_stieltjes(z, ratio)
    return -(ratio * m * m + m) / (2.0 * ratio * z * m + z - 1.0 + ratio)


def fresh_input_stieltjes(tau: float, ratio: float) -> float:
    """(1/N0) Tr (S + tau)^-1 for S = X^T X / N0, via A = X X^T / N0 (ratio = P / N0)."""
    return ratio * mp_stieltjes(-tau, ratio) + (1.0 - ratio) / tau


def integral_u(
    ratio: float, alpha: float, s2: float, temperature: float, signal: float, noise: float
) -> float:
    """BPKR fixed point with traces and quadratic forms replaced by Marchenko-Pastur integrals.

    Linear teacher Y = sqrt(signal) X beta / sqrt(N0) + sqrt(noise) xi on isotropic Gaussian inputs:
    E[Y Y^T] = signal A + noise Id, A = X X^T / N0 with MP ratio P / N0.
    """
    check_positive("prior variance s2", s2)
    check_positive("temperature", temperature)

    def residual(u: float) -> float:
        tau = temperature / (u * s2)
        m0 = mp_stieltjes(-tau, ratio)
        m1 = mp_stieltjes_derivative(-tau, ratio)
        trace = 1.0 - tau * m0
        quad = (signal * (1.0 - 2.0 * tau * m0 + tau**2 * m1) + noise * (m0 - tau * m1)) / (u * s2)
        return u / s2 - 1.0 + alpha * (trace - quad)

    return float(brentq(residual, *bracket(residual, s2), xtol=1e-14, rtol=1e-12))


def integral_variance_ratio(ratio: float, u: float, s2: float, temperature: float) -> float:
    """Mean fresh-input variance T m_S(-T/(u s2)) over its NNGP value T m_S(-T/s2^2).

    The renormalised kernel is u K0 = u s2 A and the NNGP kernel s2 K0 = s2^2 A (A = X X^T / N0),
    so the ratio is exactly 1 at u = s2 for every s2.
    """
    num = fresh_input_stieltjes(temperature / (u * s2), ratio)
    return num / fresh_input_stieltjes(temperature / s2**2, ratio)
