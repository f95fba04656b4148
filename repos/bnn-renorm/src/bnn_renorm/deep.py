"""Deep linear networks (L hidden layers of equal width N): BPKR and the exact posterior.

f(x) = a^T W_L ... W_1 x / sqrt(N^L N0), every weight N(0, s2). Given the readout and the upper
layers, v = W_1^T ... W_L^T a / sqrt(N^L) is N(0, U s2 Id) with U = u_1 ... u_L, u_l = s2 chi2_N / N
independent (each layer's squared norm is independent of its direction), so the network is a
GP with kernel U K0 given U (K0 = s2 X X^T / N0; the NNGP is s2^L K0) and the exact posterior
is a one-dimensional mixture over log U, whose prior is the L-fold convolution of the density
of log(s2 chi2_N / N). BPKR (Li & Sompolinsky 2021) is the joint mode over (log u_1, ...,
log u_L): every layer solves the same equation u/s2 = 1 - Tr[U K0 (U K0 + T)^-1]/N +
Y^T (U K0 + T)^-1 U K0 (U K0 + T)^-1 Y / N, so u_l = u and U = u^L (L = 1 is renorm.bpkr_u).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import brentq

from .kernels import check_positive, gp_predict
from .renorm import (
    bracket,
    fresh_input_stieltjes,
    mp_stieltjes,
    mp_stieltjes_derivative,
    spectrum,
)


def _check(width: int, s2: float, temperature: float, depth: int) -> None:
    check_positive("prior variance s2", s2)
    check_positive("temperature", temperature)
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    if depth < 1:
        raise ValueError(f"depth (hidden layers) must be >= 1, got {depth}")


def deep_residual(u, lam, proj, width: int, s2: float, t: float, depth: int) -> float:
    """Per-layer BPKR residual at equal layer scales u (total scale U = u^depth)."""
    big = u**depth
    denom = big * lam + t
    trace = np.sum(big * lam / denom)
    quad = np.sum(proj**2 * big * lam / denom**2)
    return u / s2 - 1.0 + (trace - quad) / width


def deep_bpkr_scale(
    k_base: jax.Array, y: jax.Array, width: int, s2: float, temperature: float, depth: int
) -> float:
    """The total renormalisation U = u^L of the kernel K0 at the BPKR fixed point."""
    _check(width, s2, temperature, depth)
    lam, _, proj = spectrum(k_base, y)
    args = (lam, proj, width, s2, temperature, depth)
    lo, hi = bracket(lambda u: deep_residual(u, *args), s2)
    u = brentq(deep_residual, lo, hi, args=args, xtol=1e-14, rtol=1e-12)
    return float(u**depth)


def log_scale_prior(width: int, s2: float, depth: int, centre: float, step: float = 0.005):
    """Grid of log U and the log prior density (up to a constant) of U = prod of `depth`
    independent s2 chi2_N / N, by an L-fold convolution on a uniform grid of log u.

    Exponential tilting keeps it finite where the posterior lives: each layer's density is
    multiplied by exp(theta z), theta putting the tilted mode at the per-layer scale `centre`
    (BPKR's), and exp(theta log U) is divided out after convolving (far tails of a product of
    chi-squares underflow float64 otherwise; at L = 3, N = 400 by 1e-340)."""
    z = np.log(centre) + np.arange(-20.0, 6.0, step)
    theta = 0.5 * width * (centre / s2 - 1.0)
    log_p = 0.5 * width * (z - np.exp(z) / s2) + theta * z
    shift = log_p.max()
    one = np.exp(log_p - shift)
    dens = one
    for _ in range(depth - 1):
        dens = np.convolve(dens, one)
    grid = depth * z[0] + step * np.arange(dens.size)
    with np.errstate(divide="ignore"):
        return grid, np.log(dens) - theta * grid


def deep_exact_posterior(
    k_train: jax.Array,
    k_cross: jax.Array,
    k_diag: jax.Array,
    y: jax.Array,
    width: int,
    s2: float,
    temperature: float,
    depth: int,
) -> tuple[jax.Array, jax.Array]:
    """Exact predictive mean and variance of a depth-L linear net: quadrature over log U.

    Kb must be K0 (linear nets). depth = 1 equals samplers.exact_linear_posterior."""
    _check(width, s2, temperature, depth)
    lam, vec, proj = spectrum(k_train, y)
    centre = deep_bpkr_scale(k_train, y, width, s2, temperature, depth) ** (1.0 / depth)
    log_u, log_prior = log_scale_prior(width, s2, depth, centre)
    keep = np.isfinite(log_prior)
    log_u, log_prior = log_u[keep], log_prior[keep]
    u = np.exp(log_u)[:, None]
    denom = u * lam[None, :] + temperature
    log_like = -0.5 * np.sum(np.log(denom) + proj[None, :] ** 2 / denom, axis=1)
    log_w = log_prior + log_like
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    c = np.asarray(k_cross) @ vec
    means = u * ((proj[None, :] / denom) @ c.T)
    variances = u * np.asarray(k_diag)[None, :] - u**2 * ((1.0 / denom) @ (c**2).T)
    mean = w @ means
    var = w @ variances + w @ means**2 - mean**2
    return jnp.asarray(mean), jnp.asarray(var)


def deep_integral_scale(
    ratio: float,
    alpha: float,
    s2: float,
    temperature: float,
    signal: float,
    noise: float,
    depth: int,
) -> float:
    """Eq. 3 at depth L: the deep fixed point with Marchenko-Pastur traces and quadratic forms
    (isotropic inputs, MP ratio P / N0; linear teacher of power `signal`, label noise `noise`).
    Returns U = u^L; depth = 1 is renorm.integral_u."""
    _check(1, s2, temperature, depth)

    def residual(u: float) -> float:
        scale = u**depth * s2
        tau = temperature / scale
        m0 = mp_stieltjes(-tau, ratio)
        m1 = mp_stieltjes_derivative(-tau, ratio)
        trace = 1.0 - tau * m0
        quad = (signal * (1.0 - 2.0 * tau * m0 + tau**2 * m1) + noise * (m0 - tau * m1)) / scale
        return u / s2 - 1.0 + alpha * (trace - quad)

    u = brentq(residual, *bracket(residual, s2), xtol=1e-14, rtol=1e-12)
    return float(u**depth)


def deep_integral_variance_ratio(ratio: float, big: float, s2: float, t: float, depth: int):
    """Eq. 3's mean fresh-input variance with kernel U K0 over the NNGP's (s2^L K0 = s2^(L+1) A)."""
    num = fresh_input_stieltjes(t / (big * s2), ratio)
    return num / fresh_input_stieltjes(t / s2 ** (depth + 1), ratio)


def deep_variance_ratios(blocks, y, width: int, s2: float, t: float, depth: int) -> dict:
    """Mean predictive variance over the NNGP's (kernel s2^L K0): BPKR and the exact posterior."""
    k_train, k_cross, k_diag = blocks
    nngp = s2**depth
    v_gp = float(jnp.mean(gp_predict(nngp * k_train, nngp * k_cross, nngp * k_diag, y, t)[1]))
    big = deep_bpkr_scale(k_train, y, width, s2, t, depth)
    v_bpkr = float(jnp.mean(gp_predict(big * k_train, big * k_cross, big * k_diag, y, t)[1]))
    v_exact = float(jnp.mean(deep_exact_posterior(*blocks, y, width, s2, t, depth)[1]))
    return {"bpkr": v_bpkr / v_gp, "exact": v_exact / v_gp, "scale": big / nngp}
