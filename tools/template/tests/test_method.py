"""The method against a slow, obvious reference and on a closed-form case (template placeholder)."""

from __future__ import annotations

import torch

from __package__ import baselines, data, method


def test_loss_matches_python_loop():
    x, y, w = data.linear_regression(10, 3, seed=0)
    loop = sum((float(x[i] @ w) - float(y[i])) ** 2 for i in range(10)) / 10
    assert abs(float(method.squared_loss(w, x, y)) - loop) < 1e-12


def test_gradient_descent_reaches_least_squares():
    x, y, _ = data.linear_regression(64, 3, seed=1)
    w_gd = method.gradient_descent(x, y, steps=500, lr=0.1)
    assert torch.allclose(w_gd, baselines.closed_form(x, y), atol=1e-6)


def test_data_is_deterministic_in_seed():
    a, b = data.linear_regression(5, 2, seed=3), data.linear_regression(5, 2, seed=3)
    assert all(torch.equal(u, v) for u, v in zip(a, b))
    assert not torch.equal(a[0], data.linear_regression(5, 2, seed=4)[0])
