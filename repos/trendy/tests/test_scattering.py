"""The averaged scattering: invariances, zeroth order, frame bound, kymatio, bad input."""

from __future__ import annotations

import pytest
import torch

from trendy.scattering import (
    averaged_scattering,
    fourier_power,
    kymatio_averaged,
    littlewood_paley_bound,
    mean_measurement,
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


def test_matches_kymatio_on_smooth_periodic_fields():
    """Loose: kymatio pads by reflection and subsamples before averaging; we stay periodic."""
    n = 16
    i = torch.arange(n, dtype=torch.float32)
    x = 1 + torch.sin(2 * torch.pi * i / n)[:, None] * torch.cos(2 * torch.pi * 2 * i / n)[None]
    ours, ref = averaged_scattering(x[None]), kymatio_averaged(x[None])
    assert ours.shape == ref.shape
    assert float((ours - ref).norm() / ref.norm()) < 0.1


def test_nan_field_is_a_clear_error():
    x = fields()
    x[0, 2, 2] = float("nan")
    with pytest.raises(ValueError, match="field contains 1 NaN/inf"):
        averaged_scattering(x)
