"""The method's maths against closed forms, slow references and finite differences."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from mcl_nf import baselines, data, testtime, train
from mcl_nf.modular import (
    adapt,
    broadcast,
    fim_weights,
    fit_modules,
    information_gain,
    information_gain_reference,
    init_params,
    maml_outer_loss,
    point_losses,
)


def tiny_problem(hidden=6, n_modules=3, m=5, dtype=torch.float32):
    module, params = init_params(hidden, 30.0, seed=0)
    module = module.to(dtype)
    params = {k: v.to(dtype) for k, v in params.items()}
    g = torch.Generator().manual_seed(1)
    coords = torch.rand(n_modules, m, 2, generator=g, dtype=dtype) * 2 - 1
    targets = torch.rand(n_modules, m, 3, generator=g, dtype=dtype)
    return module, params, coords, targets


def test_partition_routes_every_pixel_to_exactly_one_module():
    coords, index = data.partition(12, 3)
    assert coords.shape == (9, 16, 2)
    assert torch.equal(index.flatten().sort().values, torch.arange(144))
    for k in range(9):  # each module owns one contiguous block
        assert coords[k, :, 0].max() - coords[k, :, 0].min() < 2 / 3


def test_one_inner_step_is_a_hand_computed_sgd_step():
    module, params, coords, targets = tiny_problem()
    stepped = adapt(module, broadcast(params, 3), coords, targets, steps=1, lr=0.05)
    for i in range(3):
        p = {k: v.clone().requires_grad_() for k, v in params.items()}
        loss = ((torch.func.functional_call(module, p, (coords[i],)) - targets[i]) ** 2).mean()
        grads = torch.autograd.grad(loss, list(p.values()))
        for (k, v), gr in zip(p.items(), grads):
            torch.testing.assert_close(stepped[k][i], v - 0.05 * gr)


def test_meta_gradient_matches_finite_differences():
    module, params, coords, targets = tiny_problem(hidden=4, dtype=torch.float64)
    theta = {k: v.clone().requires_grad_() for k, v in params.items()}
    loss = maml_outer_loss(module, theta, coords, targets, steps=2, lr=0.02, first_order=False)
    grads = torch.autograd.grad(loss, list(theta.values()))
    direction = {
        k: torch.randn_like(v, generator=torch.Generator().manual_seed(3))
        for k, v in params.items()
    }
    h = 1e-6

    def outer(sign: float) -> float:
        shifted = {k: (v + sign * h * direction[k]).requires_grad_() for k, v in params.items()}
        return float(maml_outer_loss(module, shifted, coords, targets, 2, 0.02, False))

    numeric = (outer(1) - outer(-1)) / (2 * h)
    analytic = sum(float((g * direction[k]).sum()) for k, g in zip(params, grads))
    assert abs(numeric - analytic) < 1e-5 * max(1.0, abs(analytic))


def test_first_and_second_order_agree_at_zero_inner_lr():
    module, params, coords, targets = tiny_problem()
    out = []
    for first_order in (True, False):
        theta = {k: v.clone().requires_grad_() for k, v in params.items()}
        loss = maml_outer_loss(module, theta, coords, targets, 2, 0.0, first_order)
        out.append(torch.autograd.grad(loss, list(theta.values())))
    for a, b in zip(*out):
        torch.testing.assert_close(a, b)


def test_information_gain_of_a_linear_field_is_closed_form():
    """f = W x with C outputs: d f_c / d W_oi = [c = o] x_i, so d_j[o, i] = x_ji^2 and
    g_j = C sum_i x_ji^2 / (sum_k x_ki^2 + eps), whatever the targets (label-free)."""
    linear = nn.Linear(2, 3, bias=False)
    params = {"weight": torch.randn(1, 3, 2, dtype=torch.float64)}
    coords = torch.randn(1, 7, 2, dtype=torch.float64)
    sq = coords[0].pow(2)
    eps = 0.1 * sq.sum(0).mean()
    expected = 3 * (sq / (sq.sum(0) + eps)).sum(-1)
    torch.testing.assert_close(
        information_gain_reference(linear.double(), params, coords, 0.1)[0], expected
    )


def test_layerwise_information_gain_equals_per_sample_jacobians():
    module, params, coords, _ = tiny_problem(dtype=torch.float64)
    batched = {k: v + 0.01 * torch.randn_like(v) for k, v in broadcast(params, 3).items()}
    torch.testing.assert_close(
        information_gain(module, batched, coords, 0.01),
        information_gain_reference(module, batched, coords, 0.01),
    )


def test_information_gains_sum_to_the_parameter_count_without_damping():
    """Each parameter's batch information is split over the samples: sum_j g_j = P."""
    module, params, coords, _ = tiny_problem(dtype=torch.float64)
    gain = information_gain(module, broadcast(params, 3), coords, 1e-12)
    count = sum(v.numel() for v in params.values())
    torch.testing.assert_close(
        gain.sum(-1), torch.full((3,), float(count), dtype=gain.dtype), rtol=1e-6, atol=0
    )


def test_fim_in_the_inner_loop_changes_the_meta_gradient_only_when_lambda_is_positive():
    module, params, coords, targets = tiny_problem()
    out = []
    for fim in (None, (0.0, 0.01), (2.0, 0.01)):
        theta = {k: v.clone().requires_grad_() for k, v in params.items()}
        loss = maml_outer_loss(module, theta, coords, targets, 2, 0.05, False, fim)
        out.append(torch.autograd.grad(loss, list(theta.values())))
    for a, b, c in zip(*out):
        assert torch.equal(a, b)
    assert any(not torch.allclose(a, c) for a, c in zip(out[0], out[2]))


def test_lambda_zero_gives_mse_and_weights_carry_no_gradient():
    gain = torch.rand(2, 5, requires_grad=True)
    assert torch.equal(fim_weights(gain, 0.0), torch.ones(2, 5))
    w = fim_weights(gain, 2.0)
    assert not w.requires_grad
    torch.testing.assert_close(w.mean(-1), torch.ones(2))
    assert torch.argmax(w[0]) == torch.argmax(gain[0])
    module, params, coords, targets = tiny_problem()
    plain = adapt(module, broadcast(params, 3), coords, targets, 2, 0.05)
    fim0 = adapt(module, broadcast(params, 3), coords, targets, 2, 0.05, fim=(0.0, 0.01))
    for k, value in plain.items():
        assert torch.equal(value, fim0[k])


def test_ewc_fisher_equals_per_point_autograd():
    module, params, coords, targets = tiny_problem()
    batched = broadcast(params, 3)
    fast = baselines.diagonal_fisher(module, batched, coords, targets)
    p = {k: v[0].clone().requires_grad_() for k, v in batched.items()}
    slow = {k: torch.zeros_like(v) for k, v in p.items()}
    for j in range(coords.shape[1]):
        loss = (
            (torch.func.functional_call(module, p, (coords[0, j : j + 1],)) - targets[0, j]) ** 2
        ).mean()
        for (k, _), g in zip(p.items(), torch.autograd.grad(loss, list(p.values()))):
            slow[k] += g.pow(2) / coords.shape[1]
    for k, expected in slow.items():
        torch.testing.assert_close(fast[k][0], expected, rtol=1e-4, atol=1e-8)


def test_psnr_of_known_mse():
    assert data.psnr(0.01) == pytest.approx(20.0)
    assert data.psnr(torch.tensor(1e-4)) == pytest.approx(40.0)


def test_modules_do_not_forget_and_naive_fine_tuning_moves_sub_task_one(tiny):
    cfg = dataclasses.replace(tiny, eval_steps=(1, 8))
    coords, index = data.partition(cfg.image_size, cfg.grid)
    images = train.signals(cfg, "test", cfg.n_test)
    targets = train.split_targets(images, index)
    module, theta0 = init_params(cfg.hidden, cfg.omega0, 0)
    ours = testtime.evaluate_modular(cfg, module, theta0, coords, targets, images, index, None)
    assert ours["forgetting_q1_db"] == 0.0
    single, init = init_params(cfg.single_hidden, cfg.omega0, 0)
    _, first = baselines.fit_single(single, init, coords, targets, 8, cfg.inner_lr, "naive")
    final, _ = baselines.fit_single(single, init, coords, targets, 8, cfg.inner_lr, "naive")
    x0 = coords[0].expand(cfg.n_test, -1, -1)
    assert not torch.allclose(point_losses(single, final, x0, targets[:, 0]).mean(-1), first)


def test_finished_modules_stay_bit_identical_while_later_sub_tasks_train():
    module, params, coords, targets = tiny_problem(n_modules=4)
    targets = targets.unsqueeze(0).expand(2, -1, -1, -1)  # 2 signals, 4 sub-tasks
    snapshots: dict[int, dict[str, torch.Tensor]] = {}

    def snapshot(k, step, p):
        if step == 3:
            snapshots[k] = {name: v.detach().clone() for name, v in p.items()}

    finished = fit_modules(module, params, coords, targets, 3, 0.05, on_step=snapshot)
    alone = fit_modules(module, params, coords[:1], targets[:, :1], 3, 0.05)[0]
    for k, fitted in enumerate(finished):
        for name, value in fitted.items():
            assert torch.equal(value, snapshots[k][name])
            if k == 0:
                assert torch.equal(value, alone[name])
    assert not torch.equal(finished[0]["layers.2.bias"], finished[1]["layers.2.bias"])


def test_second_order_meta_gradient_matches_higher():
    """Cross-check against a second differentiable inner loop: `higher` (Grefenstette et al.
    2019) unrolling torch.optim.SGD on the same tiny SIREN, one module, two inner steps."""
    higher = pytest.importorskip("higher")
    module, params, coords, targets = tiny_problem(hidden=5, n_modules=1, dtype=torch.float64)
    theta = {k: v.clone().requires_grad_() for k, v in params.items()}
    loss = maml_outer_loss(module, theta, coords, targets, steps=2, lr=0.05, first_order=False)
    ours = torch.autograd.grad(loss, list(theta.values()))
    with torch.no_grad():
        for name, value in module.named_parameters():
            value.copy_(params[name])
    opt = torch.optim.SGD(module.parameters(), lr=0.05)
    with higher.innerloop_ctx(module, opt, copy_initial_weights=False) as (fmodel, diffopt):
        for _ in range(2):
            diffopt.step(((fmodel(coords[0]) - targets[0]) ** 2).mean())
        outer = ((fmodel(coords[0]) - targets[0]) ** 2).mean()
        theirs = torch.autograd.grad(outer, list(module.parameters()))
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
