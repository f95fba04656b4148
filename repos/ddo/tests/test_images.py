"""The image experiment's pieces: procedural data, the colour reward, the UNet score wrapper."""

from __future__ import annotations

import math

import torch

from ddo.images import UNetEps, colour_distance, colour_reward, coloured_shapes


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
