"""The renormalisation theory: limits, the T -> 0 quadratic, Marchenko-Pastur, bad input."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from bnn_renorm import data, kernels, renorm, train


def teacher(p=30, n0=50, seed=0):
    x, y, x_test = data.linear_teacher(p, n0, 5, seed, scale=3.0, noise=0.1)
    return x, y, x_test, kernels.linear_k0(x, x, 1.0)


def test_u_tends_to_s2_as_alpha_goes_to_zero():
    _, y, _, k0 = teacher()
    errors = [abs(renorm.bpkr_u(k0, y, width, 0.7, 0.02) / 0.7 - 1) for width in (300, 30_000, 3e6)]
    assert errors[0] > 50 * errors[1] > 2500 * errors[2] and errors[2] < 2e-4  # O(alpha)


def test_bpkr_solves_its_fixed_point_equation():
    _, y, _, k0 = teacher()
    u = renorm.bpkr_u(k0, y, 15, 1.0, 0.05)
    g = np.linalg.inv(u * np.asarray(k0) + 0.05 * np.eye(30))
    rhs = 1 - np.trace(u * k0 @ g) / 15 + float(y @ g @ (u * k0) @ g @ y) / 15
    assert u == pytest.approx(rhs, rel=1e-9)


@pytest.mark.parametrize("width", [10, 30, 120])
def test_zero_temperature_quadratic_equals_general_solver_at_small_t(width):
    x, y, _, k0 = teacher()
    u0 = renorm.bpkr_u_zero_temperature(x, y, width, 1.0)
    assert renorm.bpkr_u(k0, y, width, 1.0, 1e-7) == pytest.approx(u0, rel=1e-4)


@pytest.mark.parametrize(("p", "ratio"), [(2000, 0.5), (600, 2.0)])
def test_mp_closed_form_matches_eigenvalues(p, ratio):
    rng = np.random.default_rng(0)
    z = rng.standard_normal((p, int(p / ratio)))
    ev = np.linalg.eigvalsh(z @ z.T / z.shape[1])
    for t in (0.1, 1.0):
        assert renorm.mp_stieltjes(-t, ratio) == pytest.approx(np.mean(1 / (ev + t)), rel=1e-2)
        deriv = renorm.mp_stieltjes_derivative(-t, ratio)
        assert deriv == pytest.approx(np.mean(1 / (ev + t) ** 2), rel=2e-2)


@pytest.mark.parametrize("s2", [0.5, 1.0, 2.0])
def test_integral_fixed_point_matches_finite_size_bpkr(s2):
    x, y, _ = data.linear_teacher(400, 800, 5, 0, scale=3.0, noise=0.1)
    u = renorm.bpkr_u(kernels.linear_k0(x, x, s2), y, 200, s2, 0.05)
    u_mp = renorm.integral_u(0.5, 2.0, s2, 0.05, float(jnp.sum(y**2)) / 400 - 0.09, 0.09)
    assert u_mp == pytest.approx(u, rel=0.03)


@pytest.mark.parametrize("s2", [0.5, 1.0, 2.0])
def test_integral_variance_ratio_is_one_without_renormalisation(s2):
    for ratio in (0.4, 2.5):
        assert renorm.integral_variance_ratio(ratio, s2, s2, 0.02) == pytest.approx(1.0, rel=1e-12)
    assert renorm.integral_variance_ratio(0.4, 2 * s2, s2, 0.02) > 1.5  # u > s2 widens it


@pytest.mark.parametrize("s2", [0.5, 2.0])
def test_integral_variance_ratio_matches_finite_size_ratio(s2):
    # Eq. 3's fresh-input variance against the GP formulas on a large Gaussian design.
    x, y, x_test = data.linear_teacher(300, 600, 200, 1, scale=3.0, noise=0.1)
    blocks = train.kernel_blocks(kernels.linear_nngp, x, x_test, s2)
    u = 1.7 * s2
    finite = renorm.renormalised_variance_ratio(*blocks, y, u, s2, 0.05)
    assert renorm.integral_variance_ratio(0.5, u, s2, 0.05) == pytest.approx(finite, rel=0.03)


@pytest.mark.parametrize("s2", [0.5, 1.0, 2.0])
def test_bpkr_ratio_tends_to_one_for_wide_nets_at_any_prior_variance(s2):
    x, y, x_test = data.linear_teacher(30, 50, 5, 0, scale=3.0, noise=0.1)
    blocks = train.kernel_blocks(kernels.linear_nngp, x, x_test, s2)
    u = renorm.bpkr_u(blocks[0], y, 10**7, s2, 0.02)
    assert renorm.renormalised_variance_ratio(*blocks, y, u, s2, 0.02) == pytest.approx(1, abs=1e-4)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x, y, k: renorm.bpkr_u(k, y, 10, 1.0, 0.0), "temperature must be"),
        (lambda x, y, k: renorm.bpkr_u(k, y, 10, -1.0, 0.1), "prior variance s2 must be"),
        (lambda x, y, k: renorm.bpkr_u(k, y.at[0].set(jnp.nan), 10, 1.0, 0.1), "NaN"),
        (lambda x, y, k: renorm.bpkr_u_zero_temperature(x[:, :20], y, 10, 1.0), "P=30 > N0=20"),
        (lambda x, y, k: kernels.gp_predict(k, k, jnp.diag(k), y, -0.1), "temperature must be"),
    ],
)
def test_bad_input_raises_clear_error(call, message):
    x, y, _, k0 = teacher()
    with pytest.raises(ValueError, match=message):
        call(x, y, k0)
