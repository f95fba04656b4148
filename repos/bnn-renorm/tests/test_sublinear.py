"""The sublinear-width estimator: its integral formula against exact GP variances, the tangent
kernel against its closed form, the trained network at a stationary point, bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_renorm import data, kernels, sublinear


def fresh_gp_variance(k_train, k_cross, k_diag, t):
    return float(
        jnp.mean(kernels.gp_predict(k_train, k_cross, k_diag, jnp.zeros(len(k_train)), t)[1])
    )


@pytest.mark.parametrize(("p", "n0"), [(300, 600), (600, 300)])
def test_integral_formula_matches_fresh_input_variance_on_a_gaussian_design(p, n0):
    # 1/m(-T) - T from the Gram spectrum alone against the exact mean variance at 400 fresh inputs.
    x, _, x_test = data.linear_teacher(p, n0, 400, 0, 1.0, 0.1)
    k = lambda a, b: kernels.linear_nngp(a, b, 1.5)
    exact = fresh_gp_variance(k(x, x), k(x_test, x), jnp.diag(k(x_test, x_test)), 0.1)
    lam = np.linalg.eigvalsh(np.asarray(k(x, x)))
    assert sublinear.spectral_fresh_variance([lam], p, 0.1) == pytest.approx(exact, rel=0.03)


def test_integral_formula_handles_rank_deficient_kernels():
    # Bayesian linear regression on N = 20 Gaussian features from P = 400 points: rank 20 of 400;
    # the zero part of the spectrum enters as the pseudo-inverse and the variance is ~T N/(P - N).
    rng = np.random.default_rng(1)
    feats, feats_test = rng.standard_normal((400, 20)), rng.standard_normal((500, 20))
    prec = np.eye(20) + feats.T @ feats / 0.2
    exact = np.mean(np.sum(feats_test * np.linalg.solve(prec, feats_test.T).T, axis=1))
    lam = np.linalg.eigvalsh(feats @ feats.T)
    estimate = sublinear.spectral_fresh_variance([lam], 400, 0.2)
    assert estimate == pytest.approx(exact, rel=0.05)
    assert estimate == pytest.approx(0.2 * 20 / 380, rel=0.05)
    assert sublinear.spectral_fresh_variance([lam, lam], 400, 0.2) == pytest.approx(estimate)


def test_tangent_kernel_equals_its_closed_form():
    s2, n0, width = 0.7, 5, 3
    params = sublinear.prior_draw(jax.random.PRNGKey(0), width, n0, s2)
    x = jnp.asarray(np.random.default_rng(2).standard_normal((4, n0)))
    j = sublinear.tangent_features(params, x, s2)
    pre = x @ params["w"].T / np.sqrt(n0)
    phi, dphi = jax.nn.relu(pre), (pre > 0).astype(float)
    closed = s2 / width * (phi @ phi.T + (dphi * params["a"] ** 2) @ dphi.T * (x @ x.T / n0))
    np.testing.assert_allclose(j @ j.T, closed, rtol=1e-10, atol=1e-12)
    lam = sublinear.empirical_kernel_spectrum(params, x, s2)
    np.testing.assert_allclose(np.sort(lam), np.linalg.eigvalsh(np.asarray(closed)), atol=1e-10)


def test_trained_network_is_a_local_minimum_of_the_gibbs_energy():
    # ReLU kinks keep the gradient from vanishing exactly, so check that no small random step
    # lowers the energy and that training lowered it far below the prior draw's.
    x, y, _ = data.linear_teacher(30, 6, 2, 0, 3.0, 0.1)
    energy = sublinear._energy(jax.nn.relu)
    params = sublinear.train_map(jax.random.PRNGKey(1), x, y, 3, 1.0, 0.05)
    flat = jnp.concatenate([params["a"], params["w"].ravel()])
    value = float(energy(flat, x, y, 1.0, 0.05, 3)[0])
    steps = 1e-3 * jax.random.normal(jax.random.PRNGKey(2), (50, flat.size))
    assert min(float(energy(flat + d, x, y, 1.0, 0.05, 3)[0]) for d in steps) > value - 1e-6
    start = jax.random.normal(jax.random.PRNGKey(1), (flat.size,))
    assert value < 0.1 * float(energy(start, x, y, 1.0, 0.05, 3)[0])


def test_bad_input_is_a_clear_error():
    x, y, x_test = data.linear_teacher(10, 4, 2, 0, 1.0, 0.1)
    with pytest.raises(ValueError, match="restarts must be >= 1"):
        sublinear.sublinear_estimate(0, x, y, x_test, 2, 1.0, 0.05, 0)
    with pytest.raises(ValueError, match="P=10 eigenvalues"):
        sublinear.spectral_fresh_variance([np.ones(9)], 10, 0.05)
    with pytest.raises(ValueError, match="temperature must be"):
        sublinear.spectral_fresh_variance([np.ones(10)], 10, 0.0)
