"""The neural ODE: integrator, loss, learning a parameterised linear ODE, range warning."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchdiffeq import odeint

from trendy import bifurcation, node, pde


def test_euler_integration_equals_a_python_loop():
    box = torch.tensor([[0.0], [1.0]])
    model = node.ParamODE(3, 1, 8, 2, box)
    s0, theta = torch.randn(4, 3), torch.rand(4, 1)
    ours = node.integrate(model, s0, theta, 10)
    x, loop = s0, [s0]
    for _ in range(10):
        x = x + 0.1 * model.field(x, theta)
        loop.append(x)
    assert torch.allclose(ours, torch.stack(loop, 1), atol=1e-6)
    t = torch.linspace(0, 1, 11)
    assert torch.allclose(ours, odeint(model, s0, t, method="euler").transpose(0, 1))


def test_loss_is_zero_for_identical_trajectories_and_matches_by_hand():
    true = torch.randn(2, 5, 3)
    assert float(node.trajectory_loss(true, true, 0.5)) == 0.0
    pred = true.clone()
    pred[0, 2, 1] += 0.1
    # state term: 0.01 / (2*5); slope term: two differences of 0.1/dt, dt=1/4, over 2*4 entries
    expected = 0.01 / 10 + 0.5 * 2 * (0.1 * 4) ** 2 / 8
    assert abs(float(node.trajectory_loss(pred, true, 0.5)) - expected) < 1e-6


def test_learns_a_linear_ode_whose_rate_depends_on_theta():
    torch.manual_seed(0)
    theta = torch.linspace(-1, 1, 16)[:, None]
    t = torch.linspace(0, 1, 11)
    s0 = torch.ones(16, 1)
    true = (s0 * torch.exp(-theta * t[None]))[..., None].squeeze(-1)[..., None]
    model = node.fit_node(
        true,
        theta,
        steps=20,
        hidden=32,
        depth=2,
        epochs=300,
        lr=1e-2,
        beta=0.0,
        seed=0,
        box=torch.tensor([[-1.0], [1.0]]),
    )
    pred = node.predict(model, s0, theta, 10, 11)
    assert float((pred - true).pow(2).mean()) < 1e-3
    rates = node.jacobian_spectrum(model, torch.ones(3, 1), torch.tensor([[-0.8], [0.0], [0.8]]))
    assert rates.real[0, 0] > 0 > rates.real[2, 0]


def test_normalised_mse_is_scale_free_and_one_for_the_mean_guess():
    true = torch.randn(5, 7, 3, generator=torch.Generator().manual_seed(0))
    true = true * torch.tensor([10.0, 1.0, 0.1])
    guess = true.reshape(-1, 3).mean(0).expand_as(true)
    assert node.normalised_mse(true, true) == 0.0
    # predicting each coordinate's mean: error = per-coordinate variance, so the ratio is 1
    assert abs(node.normalised_mse(guess, true) - 1.0) < 1e-6
    pred = true + 0.3 * torch.randn(true.shape, generator=torch.Generator().manual_seed(1))
    scaled = node.normalised_mse(50.0 * pred, 50.0 * true)
    assert abs(scaled - node.normalised_mse(pred, true)) < 1e-6


def test_parameters_outside_the_trained_range_warn():
    model = node.ParamODE(2, 2, 8, 1, torch.tensor([[0.0, 0.0], [1.0, 1.0]]))
    with pytest.warns(UserWarning, match="outside the trained range"):
        node.integrate(model, torch.zeros(1, 2), torch.tensor([[2.0, 0.5]]), 4)


def test_first_crossing_interpolates():
    b = torch.linspace(0, 4, 5).numpy()
    assert abs(bifurcation.first_crossing(b, b - 2.5) - 2.5) < 1e-9
    assert bifurcation.first_crossing(b, -b - 1) != bifurcation.first_crossing(b, -b - 1)


def test_pca_layer_matches_sklearn_on_standardised_training_features():
    from sklearn.decomposition import PCA

    gen = torch.Generator().manual_seed(0)
    train = torch.randn(10, 7, 5, generator=gen) * torch.tensor([1.0, 3.0, 0.1, 2.0, 5.0])
    test = torch.randn(4, 7, 5, generator=gen)
    reducer = node.Reducer(train, 3)
    flat = train.reshape(-1, 5).double().numpy()
    mean, std = flat.mean(0), flat.std(0) + 1e-8
    ref = PCA(n_components=3).fit((flat - mean) / std)
    want = ref.transform((test.reshape(-1, 5).double().numpy() - mean) / std)
    assert torch.equal(reducer(test).reshape(-1, 3), torch.tensor(want, dtype=torch.float32))
    back = ref.inverse_transform(want) * std + mean
    assert torch.equal(reducer.inverse(torch.tensor(want)), torch.tensor(back).float())
    rebuilt = node.Reducer.from_state(reducer.state())
    assert torch.equal(rebuilt(test), reducer(test))


def test_hopf_line_is_read_from_the_euler_map_the_field_was_trained_for():
    """Audit: a field whose Euler step h reproduces the exact flow of the linearised Brusselator
    (time rescaled by t_end = 50, h = 1/40 as in the quick preset) has its Hopf crossing at
    B = 1 + A^2. Reading Re(mu) instead, as if h were infinitesimal, finds no crossing at all."""
    from scipy.linalg import expm

    a, t_end, h = 2.0, 50.0, 1.0 / 40
    b = torch.linspace(3.5, 6.5, 61).double().numpy()
    eigs = []
    for bb in b:
        jac = t_end * pde.brusselator_jacobian(a, float(bb)).numpy()
        field = (expm(h * jac) - torch.eye(2).double().numpy()) / h
        eigs.append(torch.linalg.eigvals(torch.tensor(field)).numpy())
    eigs = np.stack(eigs)
    _, cplx = bifurcation.growth_indicators(eigs, h)
    assert abs(bifurcation.first_crossing(b, cplx) - pde.hopf_line(a)) < 0.01 * pde.hopf_line(a)
    _, naive = bifurcation.growth_indicators(eigs)
    assert not bifurcation.first_crossing(b, naive) < 6.5


def test_reducer_inverse_is_exact_on_the_kept_subspace_and_per_trajectory_nmse_sums_up():
    gen = torch.Generator().manual_seed(0)
    feats = torch.randn(6, 5, 4, generator=gen) * torch.tensor([3.0, 1.0, 0.5, 2.0])
    full = node.Reducer(feats, 4)
    assert torch.allclose(full.inverse(full(feats)), feats, atol=1e-5)
    s = node.Reducer(feats, 2)(feats)
    again = node.Reducer(feats, 2)
    assert torch.allclose(again(again.inverse(s)), s, atol=1e-5)
    pred = s + 0.1 * torch.randn(s.shape, generator=gen)
    per = node.per_trajectory_nmse(pred, s)
    assert per.shape == (6,) and abs(per.mean() - node.normalised_mse(pred, s)) < 1e-6
