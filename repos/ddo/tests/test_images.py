"""The image experiment's pieces: procedural data, the colour reward, the UNet score wrapper.

The sampler checks isolate the reference path of the image experiment: an exact Gaussian
epsilon through UNetEps's preconditioning, eps -> score, and the image-shaped reverse SDE; the
timestep the UNet sees in training and in sampling; and the restoring force at high noise whose
absence made the UNet's samples leave the data range (README, image experiment).
"""

from __future__ import annotations

import math

import torch

from ddo import baselines
from ddo.h_transform import time_grid
from ddo.images import UNetEps, _sampler, colour_distance, colour_reward, coloured_shapes
from ddo.reference import Mixture, marginal_score, ou_coefficients

SIZE, WIDTHS, T_MAX, T_MIN = 8, (8, 16), 5.0, 0.001
DIM = 3 * SIZE * SIZE


def gaussian_eps(mean: torch.Tensor, std: float, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """E[eps | x_t] for data N(mean, std^2 I) under the OU process: sqrt(v)(x - a mean) / var_t."""
    a, v = ou_coefficients(t)
    a, v = a.reshape(-1, *[1] * (x.dim() - 1)), v.reshape(-1, *[1] * (x.dim() - 1))
    return v.sqrt() * (x - a * mean) / (a**2 * std**2 + v)


class GaussianUNet(UNetEps):
    """UNetEps whose residual F is the exact one for Gaussian data: forward must return the
    exact epsilon, so sampling it tests the preconditioning, eps -> score and the sampler."""

    def __init__(self, mean: torch.Tensor, std: float):
        super().__init__(SIZE, WIDTHS, T_MAX)
        self.mean, self.std = mean, std

    def residual(self, x_scaled, t):
        a, v = (c[:, None, None, None] for c in ou_coefficients(t))
        s = (a**2 * self.sigma_data**2 + v).sqrt()
        x = x_scaled * s
        exact = gaussian_eps(self.mean, self.std, x, t)
        return (exact - v.sqrt() * x / s**2) * s / (a * self.sigma_data)


def test_coloured_shapes_are_deterministic_two_coloured_and_bounded():
    a = coloured_shapes(6, 16, torch.Generator().manual_seed(0))
    b = coloured_shapes(6, 16, torch.Generator().manual_seed(0))
    c = coloured_shapes(6, 16, torch.Generator().manual_seed(1))
    assert a.shape == (6, 3, 16, 16) and torch.equal(a, b) and not torch.equal(a, c)
    assert a.min() >= -1 and a.max() <= 1
    for image in a:  # a shape on a background: exactly two colours, both present
        colours = image.reshape(3, -1).T.unique(dim=0)
        assert colours.shape[0] == 2


def test_colour_reward_is_highest_at_the_target_colour():
    target = torch.full((1, 3, 16, 16), 2 * 0.9 - 1).reshape(1, -1)
    black = torch.full((1, 3 * 16 * 16), -1.0)
    assert float(colour_distance(target)) < 1e-6
    assert math.isclose(float(colour_distance(black)), 0.9 * math.sqrt(3), rel_tol=1e-5)
    assert float(colour_reward(target, 0.1)) > float(colour_reward(black, 0.1))
    assert math.isclose(float(colour_reward(black, 0.5)), -0.9 * math.sqrt(3) / 0.5, rel_tol=1e-5)


def test_unet_chunks_agree_and_score_is_minus_eps_over_sigma():
    torch.manual_seed(0)
    net = UNetEps(8, (8, 16), t_max=5.0).eval()
    x, t = torch.randn(5, 3 * 8 * 8), torch.tensor([0.01, 0.1, 0.5, 1.0, 4.0])
    with torch.no_grad():
        whole = net(x, t)
        net.chunk = 2
        chunked = net(x, t)
    assert whole.shape == x.shape and torch.allclose(whole, chunked, atol=1e-5)
    v = 1 - torch.exp(-2 * t)
    assert torch.allclose(net.score(x, t), -chunked / v.sqrt()[:, None], atol=1e-5)


def test_eps_to_score_of_the_exact_gaussian_eps_is_the_analytic_score():
    mean = torch.linspace(-0.8, 0.8, DIM)
    gauss = Mixture(mean[None], torch.ones(1), 0.3)
    x, t = 2 * torch.randn(6, DIM), torch.tensor([0.001, 0.01, 0.1, 0.5, 1.0, 4.0])
    model = GaussianUNet(mean.reshape(3, SIZE, SIZE), 0.3)
    with torch.no_grad():
        assert torch.allclose(model(x, t), gaussian_eps(mean, 0.3, x, t), atol=1e-4, rtol=1e-4)
    score = baselines.eps_to_score(model, x, t)
    assert torch.allclose(score, marginal_score(gauss, x, t), atol=1e-3, rtol=1e-4)


def test_image_sampler_with_the_exact_gaussian_score_reproduces_its_moments():
    """The reference sampler of the image experiment, on an image-shaped Gaussian whose mean
    differs per channel and pixel (so a (C, H, W) / flattening mix-up would show)."""
    g = torch.Generator().manual_seed(0)
    mean = coloured_shapes(1, SIZE, g)[0]  # a two-colour image in [-1, 1]
    model = GaussianUNet(mean, 0.2)
    x = _sampler(model.score, DIM, time_grid(T_MAX, T_MIN, 100), g, "cpu")(2000)
    assert (x.mean(0) - mean.reshape(-1)).abs().max() < 0.05
    assert 0.19 < float(x.std(0).mean()) < 0.22  # Euler-Maruyama inflates it slightly
    assert abs(float(colour_distance(x).mean() - colour_distance(mean.reshape(1, -1)))) < 0.01


def test_unet_sees_the_same_float_timestep_in_training_and_sampling():
    torch.manual_seed(0)
    net = UNetEps(SIZE, WIDTHS, T_MAX)
    seen = []  # [OU time handed to UNetEps, timestep handed to the diffusers UNet] per call
    outer, inner = net.forward, net.unet.forward

    def spy_outer(x, t):
        seen.append([t.reshape(-1).clone()])
        return outer(x, t)

    def spy_inner(sample, timestep, **kwargs):
        seen[-1].append(timestep.clone())
        return inner(sample, timestep, **kwargs)

    net.forward, net.unet.forward = spy_outer, spy_inner
    g = torch.Generator().manual_seed(0)
    baselines.train_dsm(lambda n: coloured_shapes(n, SIZE, g).reshape(n, DIM), 2, 4, 1e-3, T_MIN,
                        T_MAX, g, model=net)  # fmt: skip
    times = time_grid(T_MAX, T_MIN, 3)
    train_calls = len(seen)
    _sampler(net.score, DIM, times, g, "cpu")(2)
    for k, (t, timestep) in enumerate(seen):
        assert timestep.dtype == torch.float32 and torch.equal(timestep, 1000 * t / T_MAX)
        if k < train_calls:
            assert (t >= T_MIN * (1 - 1e-6)).all() and (t <= T_MAX * (1 + 1e-6)).all()
        else:
            assert torch.allclose(t, times[k - train_calls].expand(2))
    assert any((s[1] != s[1].round()).any() for s in seen)  # fractional steps are not rounded
    with torch.no_grad():  # and the embedding resolves them: timesteps 0.2 vs 0.7 differ
        x = torch.randn(1, 3, SIZE, SIZE)
        low, high = torch.tensor([0.2 * T_MAX / 1000]), torch.tensor([0.7 * T_MAX / 1000])
        assert not torch.allclose(net.residual(x, low), net.residual(x, high))


def test_unet_restores_the_scale_at_high_noise_whatever_its_weights():
    """At t_max the reverse drift x + 2 score must pull x back toward N(0, I) from any size:
    eps(k x) ~ k x. A bare UNet (GroupNorm before its output) answers with unit-size output
    for every k, the cause of the out-of-range samples; the preconditioned one does not."""
    torch.manual_seed(0)
    net = UNetEps(SIZE, WIDTHS, T_MAX).eval()
    x, t = torch.randn(8, DIM), torch.full((8,), T_MAX)
    with torch.no_grad():
        for k in (0.5, 1.0, 3.0):
            eps = net(k * x, t)
            gain = float((eps * k * x).sum() / (k * x).pow(2).sum())
            assert abs(gain - 1) < 0.02, (k, gain)


def test_briefly_trained_unet_samples_stay_in_the_data_range():
    """40 score-matching steps: the reverse SDE's samples stay near [-1, 1] (a bare UNet's left
    it: about 1% of pixels in range, |x| up to ~300 at this size)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    net = UNetEps(SIZE, WIDTHS, T_MAX)
    baselines.train_dsm(lambda n: coloured_shapes(n, SIZE, g).reshape(n, DIM), 40, 16, 2e-3,
                        T_MIN, T_MAX, g, model=net)  # fmt: skip
    x = _sampler(net.score, DIM, time_grid(T_MAX, T_MIN, 20), g, "cpu")(64)
    assert float((x.abs() <= 1.1).float().mean()) > 0.85 and float(x.abs().max()) < 5
