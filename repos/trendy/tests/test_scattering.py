"""The measurements: kymatio's averaged scattering (the method's), the periodic ablation's
invariances, zeroth order and frame bound, the pattern coefficients, bad input."""

from __future__ import annotations

import pytest
import torch

from trendy.scattering import (
    MEASUREMENTS,
    averaged_scattering,
    fourier_power,
    kymatio_scattering,
    littlewood_paley_bound,
    mean_measurement,
    pattern_features,
)


def fields(seed=0, n=16, batch=3):
    return torch.randn(batch, n, n, generator=torch.Generator().manual_seed(seed))


def test_shape_and_zeroth_order_is_the_mean():
    x = fields()
    s = averaged_scattering(x)
    assert s.shape == (3, 81)
    assert torch.allclose(s[:, 0], x.mean((-1, -2)), atol=1e-6)
    assert torch.allclose(mean_measurement(x)[:, 0], x.mean((-1, -2)))


def test_invariant_to_circular_shifts():
    x = fields(1)
    shifted = x.roll((3, -5), (-2, -1))
    assert torch.allclose(averaged_scattering(x), averaged_scattering(shifted), atol=1e-5)
    assert torch.allclose(fourier_power(x), fourier_power(shifted), atol=1e-5)


def test_non_expansive_up_to_the_frame_bound():
    """||Phi x - Phi y|| <= max(1, B) rms(x - y), B the Littlewood-Paley bound of the bank."""
    bound = max(1.0, littlewood_paley_bound(16))
    for seed in range(3):
        x, y = fields(seed, batch=1), fields(seed + 10, batch=1) * 0.3
        lhs = (averaged_scattering(x) - averaged_scattering(y)).norm()
        assert lhs <= bound * (x - y).pow(2).mean().sqrt()


def smooth(n=16):
    i = torch.arange(n, dtype=torch.float32)
    return 1 + torch.sin(2 * torch.pi * i / n)[:, None] * torch.cos(2 * torch.pi * 2 * i / n)[None]


def test_kymatio_measurement_is_scattering2d_averaged_over_positions():
    from kymatio.scattering2d.frontend.torch_frontend import ScatteringTorch2D

    x = fields(3, n=16, batch=2)
    direct = ScatteringTorch2D(J=2, shape=(16, 16), L=8, max_order=2)(x).mean((-1, -2))
    assert MEASUREMENTS["scattering"] is kymatio_scattering
    assert kymatio_scattering(x).shape == (2, 81)
    assert torch.allclose(kymatio_scattering(x), direct, atol=1e-6)
    # rectangular fields and leading axes pass through
    assert kymatio_scattering(torch.ones(2, 3, 16, 24)).shape == (2, 3, 81)


def test_periodic_ablation_is_close_to_kymatio_on_smooth_fields_only():
    """kymatio pads by reflection and subsamples before averaging; the ablation stays periodic:
    a few percent apart on a smooth field (the benchmark reports the gap on random fields)."""
    x = smooth()[None]
    gap = float(
        (averaged_scattering(x) - kymatio_scattering(x)).norm() / kymatio_scattering(x).norm()
    )
    assert 0.001 < gap < 0.1
    assert abs(float(kymatio_scattering(x)[0, 0]) - float(x.mean())) < 0.02


@pytest.mark.parametrize("name", ["scattering", "scattering-periodic", "fourier"])
def test_pattern_coefficients_vanish_on_a_homogeneous_field_and_grow_with_a_pattern(name):
    """What the Turing readout relies on: zero on (A, B/A), increasing with pattern amplitude."""
    idx = pattern_features(name, 2, 8)
    amp = [
        float(MEASUREMENTS[name](2.0 + eps * (smooth() - 1)[None])[0, idx].sum())
        for eps in (0, 0.1, 0.5)
    ]
    assert abs(amp[0]) < 1e-4 and 0 < amp[1] < amp[2]
    assert pattern_features("mean", 2, 8) == []


def test_too_small_field_for_kymatio_is_a_clear_error():
    with pytest.raises(ValueError, match="too small for J=2"):
        kymatio_scattering(torch.ones(1, 3, 3))


def test_nan_field_is_a_clear_error():
    x = fields()
    x[0, 2, 2] = float("nan")
    with pytest.raises(ValueError, match="field contains 1 NaN/inf"):
        averaged_scattering(x)
