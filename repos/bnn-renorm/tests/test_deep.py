"""Deep linear networks: the exact posterior over U = u_1 ... u_L and the deep BPKR fixed point."""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest

from bnn_renorm import data, deep, kernels, renorm, samplers, train


def problem(s2, p=40, n0=80):
    x, y, x_test = data.linear_teacher(p, n0, 10, 0, scale=3.0, noise=0.1)
    return y, train.kernel_blocks(kernels.linear_nngp, x, x_test, s2)


@pytest.mark.parametrize("s2", [0.5, 2.0])
def test_depth_one_is_the_one_hidden_layer_posterior_and_fixed_point(s2):
    y, blocks = problem(s2)
    one = samplers.exact_linear_posterior(*blocks, y, 20, s2, 0.02)[1]
    deep_one = deep.deep_exact_posterior(*blocks, y, 20, s2, 0.02, 1)[1]
    np.testing.assert_allclose(np.asarray(deep_one), np.asarray(one), rtol=1e-6)
    u = renorm.bpkr_u(blocks[0], y, 20, s2, 0.02)
    assert deep.deep_bpkr_scale(blocks[0], y, 20, s2, 0.02, 1) == pytest.approx(u, rel=1e-10)


@pytest.mark.parametrize("depth", [2, 3])
def test_quadrature_over_the_product_of_chi_squares_matches_monte_carlo(depth):
    """Importance sampling U = prod_l s2 chi2_N / N from its prior (s2 = 2, where the prior
    covers the posterior) gives the quadrature's mean predictive variance within 1%."""
    s2, width, t = 2.0, 20, 0.02
    y, blocks = problem(s2)
    rng = np.random.default_rng(0)
    u = np.prod(s2 * rng.chisquare(width, size=(depth, 100_000)) / width, axis=0)
    lam, vec, proj = renorm.spectrum(blocks[0], y)
    denom = u[:, None] * lam[None] + t
    log_w = -0.5 * np.sum(np.log(denom) + proj**2 / denom, axis=1)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    c = np.asarray(blocks[1]) @ vec
    means = u[:, None] * ((proj[None] / denom) @ c.T)
    var = u[:, None] * np.asarray(blocks[2])[None] - u[:, None] ** 2 * ((1 / denom) @ (c**2).T)
    mean = w @ means
    mc = float(np.mean(w @ var + w @ means**2 - mean**2))
    quad = float(jnp.mean(deep.deep_exact_posterior(*blocks, y, width, s2, t, depth)[1]))
    assert quad == pytest.approx(mc, rel=0.01)


@pytest.mark.parametrize("s2", [0.5, 2.0])
@pytest.mark.parametrize("depth", [2, 3])
def test_deep_bpkr_is_close_to_the_exact_deep_posterior(s2, depth):
    """P = 40, N = 20, N0 = 80: BPKR within 5% of the exact posterior; the one-layer fixed point
    used at depth L (U = u, not u^L) is far off."""
    y, blocks = problem(s2)
    ratios = deep.deep_variance_ratios(blocks, y, 20, s2, 0.02, depth)
    assert ratios["bpkr"] == pytest.approx(ratios["exact"], rel=0.05)
    assert abs(ratios["exact"] - 1.0) > 0.05  # away from the NNGP: the check has teeth
    u_one = renorm.bpkr_u(blocks[0], y, 20, s2, 0.02) / s2**depth
    assert abs(u_one / ratios["scale"] - 1.0) > 0.1


def test_bad_input_is_a_clear_error():
    y, blocks = problem(1.0)
    with pytest.raises(ValueError, match="depth"):
        deep.deep_bpkr_scale(blocks[0], y, 20, 1.0, 0.02, 0)
    with pytest.raises(ValueError, match="width"):
        deep.deep_exact_posterior(*blocks, y, 0, 1.0, 0.02, 2)


def test_far_posterior_scale_is_not_lost_to_underflow():
    """s2 = 0.5, L = 3, N = 400: the posterior sits 1e-300 deep in the prior's tail; the tilted
    convolution keeps it, so the exact posterior stays next to BPKR (untilted, the P = 800
    analogue was 46% off)."""
    y, blocks = problem(0.5, p=200, n0=500)
    ratios = deep.deep_variance_ratios(blocks, y, 400, 0.5, 0.02, 3)
    assert ratios["bpkr"] == pytest.approx(ratios["exact"], rel=0.02)


def test_depth_one_eq3_is_the_one_hidden_layer_integral():
    args = (0.4, 2.0, 0.5, 0.02, 8.0, 0.09)
    assert deep.deep_integral_scale(*args, 1) == pytest.approx(renorm.integral_u(*args), rel=1e-10)
    ratio = deep.deep_integral_variance_ratio(0.4, 3.0, 0.5, 0.02, 1)
    assert ratio == pytest.approx(renorm.integral_variance_ratio(0.4, 3.0, 0.5, 0.02), rel=1e-12)


def test_study_writes_its_table_and_figure(tmp_path):
    from bnn_renorm import studies

    assert studies.main(["--out", str(tmp_path), "--sizes", "8", "16", "--seeds", "0", "1"]) == 0
    doc = json.loads((tmp_path / "deep.json").read_text())
    assert len(doc["rows"]) == 2 * 3 * 2 * 2 * 2  # sizes x depths x s2 x alphas x seeds
    assert set(doc["summary"]) == {f"L{d}_P{p}" for d in (1, 2, 3) for p in (8, 16)}
    assert (tmp_path / "deep_scaling.png").stat().st_size > 0
