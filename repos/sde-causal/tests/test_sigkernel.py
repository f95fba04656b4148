"""The PDE solver against closed forms, truncated signatures and pysiglib; Gram invariants."""

from __future__ import annotations

import numpy as np
import pysiglib
import pytest
from scipy.special import iv, jv

from sde_causal import citest, sigkernel


def _walks(n: int, length: int, dim: int, seed: int, scale: float = 0.3) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).normal(0, scale, (n, length, dim)), axis=1)


@pytest.mark.parametrize(("a", "b"), [([0.7, 0.4], [0.5, 0.9]), ([0.7, -0.4], [-0.5, 0.9])])
def test_straight_lines_match_bessel_closed_form(a, b):
    """k = I0(2 sqrt(<a, b>)) (J0 for a negative product); the explicit scheme is second order."""
    t = np.linspace(0, 1, 20)[:, None]
    x, y = (t * np.array(a))[None], (t * np.array(b))[None]
    ip = float(np.dot(a, b))
    exact = iv(0, 2 * np.sqrt(ip)) if ip >= 0 else jv(0, 2 * np.sqrt(-ip))
    err = [abs(sigkernel.signature_kernel(x, y, refinement=r)[0] - exact) for r in (0, 2)]
    assert err[0] < 5e-5 and err[1] < 3e-6 and err[0] / err[1] > 10  # 4x finer grid: ~16x smaller
    first_order = abs(sigkernel.signature_kernel(x, y, order=1)[0] - exact)
    assert first_order > 50 * err[0]


def test_pde_matches_depth8_truncated_signature_inner_product():
    x = _walks(2, 6, 2, seed=1)
    sigs = pysiglib.sig(x, 8)  # levels 1..8 without the scalar 1
    truncated = 1.0 + float(sigs[0] @ sigs[1])
    assert sigkernel.gram(x, refinement=5)[0, 1] == pytest.approx(truncated, abs=2e-4)


@pytest.mark.parametrize("refinement", [0, 2])
def test_rbf_time_augmented_gram_equals_pysiglib(refinement):
    x = sigkernel.add_time(_walks(12, 9, 2, seed=2), np.linspace(0, 1, 9))
    y = sigkernel.add_time(_walks(7, 9, 2, seed=3), np.linspace(0, 1, 9))
    ours = sigkernel.gram(x, y, sigma=0.8, refinement=refinement)
    peer = pysiglib.sig_kernel_gram(
        x, y, dyadic_order=refinement, static_kernel=pysiglib.RBFKernel(2 * 0.8**2)
    )
    np.testing.assert_allclose(ours, np.asarray(peer), atol=1e-10)


def test_gram_is_symmetric_positive_semidefinite():
    x = sigkernel.add_time(_walks(30, 8, 1, seed=4), np.linspace(0, 1, 8))
    k = sigkernel.gram(x, sigma=sigkernel.median_bandwidth(x), refinement=1)
    assert np.allclose(k, k.T)
    assert np.linalg.eigvalsh(k).min() > -1e-8 * np.abs(k).max()
    np.testing.assert_allclose(
        k[3], sigkernel.gram(x[3:4], x, sigma=sigkernel.median_bandwidth(x), refinement=1)[0]
    )


def test_path_followed_by_its_reverse_has_kernel_one():
    x = _walks(1, 6, 2, seed=5)
    there_and_back = np.concatenate([x, x[:, ::-1][:, 1:]], axis=1)
    y = _walks(3, 7, 2, seed=6)
    k = sigkernel.gram(there_and_back, y, refinement=5)
    np.testing.assert_allclose(k, 1.0, atol=5e-3)
    assert (
        np.abs(sigkernel.gram(x, y, refinement=5) - 1).max() > 0.05
    )  # the path alone is not trivial


def test_constant_padding_of_a_segment_leaves_the_kernel_unchanged():
    """What makes irregularly sampled segments comparable: repeated end points add nothing."""
    x = sigkernel.add_time(_walks(4, 6, 1, seed=7), np.linspace(0, 1, 6))
    padded = np.concatenate([x, np.repeat(x[:, -1:], 3, axis=1)], axis=1)
    np.testing.assert_allclose(
        sigkernel.gram(x, sigma=0.7), sigkernel.gram(padded, sigma=0.7), atol=1e-12
    )
    seg = citest.segment(_walks(4, 11, 1, seed=8), np.linspace(0, 1, 11), 0.0, 0.5)
    assert seg.shape == (4, 6, 2) and np.allclose(seg[:, -1, 1], 0.5)


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.full((2, 5, 1), np.nan), None, "NaN"),
        (np.zeros((2, 1, 1)), None, "at least 2 time points"),
        (np.zeros((2, 5, 1)), np.zeros((2, 5, 2)), "same number of channels"),
        (np.zeros((5, 1)), None, "shape (batch, length, channels)"),
    ],
)
def test_bad_paths_raise_clear_errors(x, y, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sigkernel.gram(x, y)


@pytest.mark.parametrize("refinement", [0, 1, 3])
@pytest.mark.parametrize("sigma", [None, 0.6])
def test_pysiglib_gram_used_by_the_test_equals_numpy_reference(refinement, sigma):
    """The CI test's Grams (pysiglib, chunked) equal our numpy solver, symmetric or not."""
    x = sigkernel.add_time(_walks(40, 7, 1, seed=9), np.linspace(0, 0.5, 7))
    y = sigkernel.add_time(_walks(5, 9, 1, seed=10), np.linspace(0, 0.5, 9))
    np.testing.assert_allclose(
        sigkernel.pysiglib_gram(x, sigma=sigma, refinement=refinement),
        sigkernel.gram(x, sigma=sigma, refinement=refinement),
        rtol=1e-10,
        atol=1e-10,
    )
    np.testing.assert_allclose(
        sigkernel.pysiglib_gram(x, y, sigma=sigma, refinement=refinement),
        sigkernel.gram(x, y, sigma=sigma, refinement=refinement),
        rtol=1e-10,
        atol=1e-10,
    )
    seg = citest.normalised_gram(x, refinement)
    np.testing.assert_allclose(np.diag(seg), 1.0)
    with pytest.raises(ValueError, match="same number of channels"):
        sigkernel.pysiglib_gram(x, np.zeros((2, 5, 3)))
