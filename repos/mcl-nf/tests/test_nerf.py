"""Toy NeRF: compositing and rays against hand-computed cases, the ground-truth scenes, and the
per-ray Fisher trace / FIM loss / EWC Fisher against per-ray autograd."""

from __future__ import annotations

import functools
import math

import pytest
import torch

from mcl_nf import baselines, data
from mcl_nf.modular import (
    adapt,
    broadcast,
    fim_weights,
    information_gain,
    information_gain_reference,
    init_params,
    point_losses,
)
from mcl_nf.nerf import BACKGROUND, DENSITY, NerfField, composite, ray_points


def nerf_problem(hidden=6, samples=5, dtype=torch.float64):
    """A tiny NeRF field, 3 modules x 4 rays of the toy city's cameras, random pixel targets."""
    make = functools.partial(NerfField, samples=samples)
    module, params = init_params(hidden, 30.0, 0, "cpu", 3, 4, make)
    module = module.to(dtype)
    rays, _ = data.city_rays(2, 2, 1, 1)
    targets = torch.rand(3, 4, 3, generator=torch.Generator().manual_seed(1), dtype=dtype)
    params = {k: broadcast({k: v.to(dtype)}, 3)[k] for k, v in params.items()}
    return module, params, rays[:3, :4].to(dtype), targets


def test_constant_density_slab_has_transmittance_exp_minus_sigma_d():
    sigma = torch.zeros(10)
    sigma[3:7] = 2.0  # a slab 4 bins = 0.4 long
    black = composite(sigma, torch.zeros(10, 3), torch.tensor(0.1))
    torch.testing.assert_close(black, torch.full((3,), math.exp(-2.0 * 0.4) * BACKGROUND))
    red = torch.zeros(10, 3)
    red[:, 0] = 1.0
    out = composite(sigma, red, torch.tensor(0.1))
    opacity = 1 - math.exp(-0.8)
    expected = torch.tensor([opacity + 1 - opacity, 1 - opacity, 1 - opacity]) * 1.0
    torch.testing.assert_close(out, expected)


def test_nerf_field_of_constant_density_renders_the_closed_form():
    """Zero weights: density and colour are the output biases everywhere along the ray."""
    module, params = init_params(4, 30.0, 0, "cpu", 3, 4, functools.partial(NerfField, samples=7))
    params = {k: torch.zeros_like(v) for k, v in params.items()}
    params["layers.2.bias"] = torch.tensor([0.5 + 0.3, -0.2, 0.0, 0.1])  # z = 0.3, rgb = .3 .5 .6
    rays = torch.tensor([[0.0, 0, 0, 0, 0, 1, 1.0, 3.0]])  # near 1, far 3: length 2
    out = torch.func.functional_call(module, params, (rays,))
    sigma = DENSITY / 2 * math.log1p(math.exp(3.0)) / 10
    opacity = 1 - math.exp(-sigma * 2)
    expected = torch.tensor([0.3, 0.5, 0.6]) * opacity + (1 - opacity) * BACKGROUND
    torch.testing.assert_close(out[0], expected)


def test_ray_points_are_bin_midpoints_between_near_and_far():
    rays = torch.tensor([[1.0, 2, 3, 0, 0, -1, 2.0, 4.0]])
    points, delta = ray_points(rays, 4)
    torch.testing.assert_close(delta, torch.tensor([0.5]))
    torch.testing.assert_close(points[0, :, 2], 3 - torch.tensor([2.25, 2.75, 3.25, 3.75]))


def test_rays_of_a_known_camera():
    rays = data.camera_rays(torch.tensor([0.0, 0, 3]), torch.zeros(3), 3, 90.0)
    assert rays.shape == (9, 6)
    assert torch.equal(rays[:, :3], torch.tensor([0.0, 0, 3]).expand(9, 3))
    torch.testing.assert_close(rays[4, 3:], torch.tensor([0.0, 0, -1]))  # centre pixel
    corner = torch.tensor([-2 / 3, 2 / 3, -1.0])  # top-left: left (-x) and up (+y)
    torch.testing.assert_close(rays[0, 3:], corner / corner.norm())
    torch.testing.assert_close(rays[:, 3:].norm(dim=-1), torch.ones(9))


def test_city_rays_route_every_ray_to_its_blocks_module():
    grid, views, test_views = 2, 3, 2
    rays, index = data.city_rays(grid, 3, views, test_views)
    assert rays.shape == (4, (views + test_views) * 9, 8)
    assert torch.equal(index.flatten(), torch.arange(index.numel()))
    centres = data.block_centres(grid)
    assert torch.equal(centres, torch.tensor([[-0.5, -0.5], [0.5, -0.5], [-0.5, 0.5], [0.5, 0.5]]))
    for k in range(4):
        # every camera of block k looks at block k's centre (a quarter block up): centre pixels
        centre_rays = rays[k, 4::9]
        look_at = torch.tensor([centres[k, 0], 0.25, centres[k, 1]])
        to_target = look_at - centre_rays[:, :3]
        dist = to_target.norm(dim=-1)
        torch.testing.assert_close(to_target / dist[:, None], centre_rays[:, 3:6])
        torch.testing.assert_close(dist, torch.full((views + test_views,), data.CAMERA_DISTANCE))
        assert bool((centre_rays[:, 6] < dist).all() and (dist < centre_rays[:, 7]).all())
    # held-out cameras differ from every training camera
    poses = data.camera_poses(grid, views, test_views)
    assert torch.cdist(poses[0, views:], poses[0, :views]).min() > 0.1


def test_scenes_are_deterministic_in_range_and_seed_dependent():
    a = data.procedural_cities(2, 2, 4, 1, 1, 8, seed=3)
    assert a.shape == (2, 4, 2, 4, 4, 3)
    assert torch.equal(a, data.procedural_cities(2, 2, 4, 1, 1, 8, seed=3))
    assert 0 <= float(a.min()) and float(a.max()) <= 1
    assert not torch.equal(a, data.procedural_cities(2, 2, 4, 1, 1, 8, seed=4))


def test_ground_truth_renders_sky_and_opaque_ground():
    scenes = data.procedural_scenes(1, 2, seed=0)
    scenes["present"][:] = 0  # no objects: ground and sky only
    up = torch.tensor([[0.5, 1.0, 0.5, 0, 1, 0, 0.0, 2.0]])
    down = torch.tensor([[0.5, 1.0, 0.5, 0, -1, 0, 0.0, 2.0]])  # onto block 3 (x > 0, z > 0)
    pixels = data.render_scenes(scenes, torch.cat([up, down]), 64, grid=2)
    torch.testing.assert_close(pixels[0, 0], torch.full((3,), BACKGROUND))
    torch.testing.assert_close(pixels[0, 1], scenes["ground"][0, 3], atol=1e-3, rtol=0)


@pytest.mark.parametrize(
    ("views", "message"),
    [
        (torch.zeros(1, 3, 2, 4, 4, 3), "expected grid"),
        (torch.zeros(1, 4, 2, 4, 5, 3), "must have shape"),
        (torch.full((1, 4, 1, 2, 2, 3), float("nan")), "NaN"),
    ],
)
def test_bad_nerf_signals_are_clear_errors(views, message):
    with pytest.raises(ValueError, match=message):
        data.check_nerf(views, grid=2)


def test_per_ray_information_gain_equals_per_ray_jacobians():
    """A ray's gradient sums its points' outer products; against full per-ray Jacobians."""
    module, params, rays, _ = nerf_problem()
    fast = information_gain(module, params, rays, 0.01)
    assert fast.shape == (3, 4)  # one information gain per ray
    torch.testing.assert_close(fast, information_gain_reference(module, params, rays, 0.01))


def test_per_ray_fim_weights_reduce_to_mse_at_lambda_zero():
    module, params, rays, targets = nerf_problem(dtype=torch.float32)
    plain = adapt(module, params, rays, targets.float(), 2, 0.05)
    fim0 = adapt(module, params, rays, targets.float(), 2, 0.05, fim=(0.0, 0.01))
    for k, value in plain.items():
        assert torch.equal(value, fim0[k])
    w = fim_weights(information_gain(module, params, rays, 0.01), 1.0)
    assert w.shape == (3, 4) and not w.requires_grad
    torch.testing.assert_close(w.mean(-1), torch.ones(3))
    fim1 = adapt(module, params, rays, targets.float(), 2, 0.05, fim=(1.0, 0.01))
    assert not torch.equal(plain["layers.2.bias"], fim1["layers.2.bias"])


def test_per_ray_ewc_fisher_equals_per_ray_autograd():
    module, params, rays, targets = nerf_problem()
    fast = baselines.diagonal_fisher(module, params, rays, targets)
    p = {k: v[0].clone().requires_grad_() for k, v in params.items()}
    slow = {k: torch.zeros_like(v) for k, v in p.items()}
    for j in range(rays.shape[1]):
        loss = point_losses(
            module, {k: v[None] for k, v in p.items()}, rays[:1, j : j + 1], targets[:1, j : j + 1]
        ).sum()
        for (k, _), g in zip(p.items(), torch.autograd.grad(loss, list(p.values()))):
            slow[k] += g.pow(2) / rays.shape[1]
    for k, expected in slow.items():
        torch.testing.assert_close(fast[k][0], expected)
