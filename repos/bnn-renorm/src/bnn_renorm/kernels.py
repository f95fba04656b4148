"""NNGP kernels of the one-hidden-layer network and the Gaussian-process predictor.

Network: f(x) = N^{-1/2} sum_i a_i phi(w_i . x / sqrt(N0)), a_i ~ N(0, s2), w_i ~ N(0, s2 Id);
the posterior is the Gibbs distribution at temperature T (Gaussian noise of variance T).
Symbols: s2 is the prior variance sigma^2, T the temperature, K0 = s2 X X^T / N0 the kernel of
the hidden pre-activations.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)

# Constant part of the high-dimensional linearisation of the ReLU arc-cosine kernel on its
# diagonal (El Karoui 2010): 1/2 - 1/(2 pi) - 1/4.
RELU_LIN_CONST = 0.5 - 1.0 / (2.0 * jnp.pi) - 0.25


def check_positive(name: str, value: float) -> None:
    """Raise a clear ValueError unless value is a finite number > 0."""
    if not (float(value) > 0.0 and jnp.isfinite(value)):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def check_finite(name: str, array: jax.Array) -> None:
    """Raise a clear ValueError when the data holds NaN or inf."""
    if not bool(jnp.all(jnp.isfinite(array))):
        raise ValueError(f"{name} contains NaN or inf values; expected finite data")


def linear_k0(x1: jax.Array, x2: jax.Array, s2: float) -> jax.Array:
    """Pre-activation kernel K0(x, x') = s2 x . x' / N0 (the brief's K0)."""
    return s2 * x1 @ x2.T / x1.shape[1]


def linear_nngp(x1: jax.Array, x2: jax.Array, s2: float) -> jax.Array:
    """NNGP kernel of the linear net, s2 * K0 = s2^2 x . x' / N0 (readout variance times K0)."""
    return s2 * linear_k0(x1, x2, s2)


def arccos_from_k0(k12: jax.Array, k11: jax.Array, k22: jax.Array) -> jax.Array:
    """E[relu(u) relu(v)] for (u, v) Gaussian with covariances k11, k22, k12 (Cho & Saul, n=1)."""
    norm = jnp.sqrt(k11 * k22)
    cos = jnp.clip(k12 / norm, -1.0, 1.0)
    theta = jnp.arccos(cos)
    return norm / (2.0 * jnp.pi) * (jnp.sin(theta) + (jnp.pi - theta) * cos)


def relu_nngp(x1: jax.Array, x2: jax.Array, s2: float) -> jax.Array:
    """ReLU NNGP kernel s2 * E_w[relu(w.x/sqrt N0) relu(w.x'/sqrt N0)], w ~ N(0, s2 Id)."""
    k12 = linear_k0(x1, x2, s2)
    k11 = s2 * jnp.sum(x1**2, axis=1) / x1.shape[1]
    k22 = s2 * jnp.sum(x2**2, axis=1) / x2.shape[1]
    return s2 * arccos_from_k0(k12, k11[:, None], k22[None, :])


def relu_nngp_linearised(x: jax.Array, s2: float) -> jax.Array:
    """High-dimensional linearisation of the ReLU Gram for inputs with |x|^2 = N0.

    s2^2 [ (1/2pi) 11^T + (1/4) X X^T / N0 + (1/2 - 1/2pi - 1/4) Id ]: a shifted Marchenko-Pastur
    spectrum, which is why the linear renormalisation theory carries over to ReLU.
    """
    p, n0 = x.shape
    gram = (jnp.ones((p, p)) / (2.0 * jnp.pi) + 0.25 * x @ x.T / n0) + RELU_LIN_CONST * jnp.eye(p)
    return s2**2 * gram


def gp_predict(
    k_train: jax.Array, k_cross: jax.Array, k_test_diag: jax.Array, y: jax.Array, temperature: float
) -> tuple[jax.Array, jax.Array]:
    """NNGP predictor: m = k_x^T (K + T Id)^{-1} Y and v = k(x,x) - k_x^T (K + T Id)^{-1} k_x.

    k_train is P x P, k_cross is M x P (test rows), k_test_diag has length M.
    """
    check_positive("temperature", temperature)
    chol = jnp.linalg.cholesky(k_train + temperature * jnp.eye(k_train.shape[0]))
    alpha = jax.scipy.linalg.cho_solve((chol, True), y)
    half = jax.scipy.linalg.solve_triangular(chol, k_cross.T, lower=True)
    return k_cross @ alpha, k_test_diag - jnp.sum(half**2, axis=0)
