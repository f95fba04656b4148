"""Kernels and the GP predictor against scikit-learn and Monte-Carlo estimates."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, DotProduct

from bnn_renorm import data, kernels


def relu(z):
    return np.maximum(z, 0.0)


def test_gp_formulas_equal_sklearn_gaussian_process():
    x, y, x_test = data.linear_teacher(25, 8, 7, seed=1, scale=1.0, noise=0.3)
    s2, t = 1.3, 0.07
    k = lambda a, b: kernels.linear_nngp(a, b, s2)
    mean, var = kernels.gp_predict(k(x, x), k(x_test, x), jnp.diag(k(x_test, x_test)), y, t)
    sk_kernel = ConstantKernel(s2 * s2 / 8, "fixed") * DotProduct(
        sigma_0=0.0, sigma_0_bounds="fixed"
    )
    gpr = GaussianProcessRegressor(sk_kernel, alpha=t, optimizer=None).fit(x, y)
    sk_mean, sk_std = gpr.predict(np.asarray(x_test), return_std=True)
    np.testing.assert_allclose(mean, sk_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(var, sk_std**2, rtol=1e-6, atol=1e-10)


def test_arccos_kernel_matches_monte_carlo_within_one_percent():
    rng = np.random.default_rng(0)
    n0, s2 = 10, 0.8
    x = rng.standard_normal((4, n0))
    w = np.sqrt(s2) * rng.standard_normal((100_000, n0))
    feats = np.maximum(x @ w.T / np.sqrt(n0), 0.0)
    mc = s2 * feats @ feats.T / w.shape[0]
    exact = np.asarray(kernels.relu_nngp(jnp.asarray(x), jnp.asarray(x), s2))
    scale = np.sqrt(np.outer(np.diag(exact), np.diag(exact)))
    assert np.max(np.abs(exact - mc) / scale) < 0.01  # 1% of the kernel's scale


def test_relu_linearisation_coefficients_hold_in_high_dimension():
    rng = np.random.default_rng(1)
    x = data.normalise_rows(rng.standard_normal((20, 4000)))
    exact = np.asarray(kernels.relu_nngp(jnp.asarray(x), jnp.asarray(x), 1.0))
    assert abs(kernels.RELU_LIN_CONST - 0.0908) < 1e-3
    np.testing.assert_allclose(kernels.relu_nngp_linearised(jnp.asarray(x), 1.0), exact, atol=3e-3)
    off = ~np.eye(20, dtype=bool)
    rho = (x @ x.T / 4000)[off]
    assert abs(exact[off].mean() - (1 / (2 * np.pi) + rho.mean() / 4)) < 1e-3


@pytest.mark.parametrize("s2", [0.5, 2.0])
def test_nngp_kernels_are_the_prior_covariance_of_the_network(s2):
    # f(x) = N^-1/2 sum_i a_i phi(w_i . x / sqrt N0), a_i ~ N(0, s2), w_i ~ N(0, s2 Id): with
    # N = 1 the prior covariance of f over 200,000 draws must equal s2 * Kb = the NNGP.
    rng = np.random.default_rng(3)
    n0 = 6
    x = rng.standard_normal((3, n0))
    a = np.sqrt(s2) * rng.standard_normal(200_000)
    w = np.sqrt(s2) * rng.standard_normal((200_000, n0))
    for nngp, phi in ((kernels.linear_nngp, lambda z: z), (kernels.relu_nngp, relu)):
        f = a[:, None] * phi(w @ x.T / np.sqrt(n0))
        mc = f.T @ f / f.shape[0]
        exact = np.asarray(nngp(jnp.asarray(x), jnp.asarray(x), s2))
        scale = np.sqrt(np.outer(np.diag(exact), np.diag(exact)))
        assert np.max(np.abs(mc - exact) / scale) < 0.02
