"""Powerpropagation and the backward-only activation pruning against obvious references."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from sparsyfed.models import build_model
from sparsyfed.powerprop import (
    SparsyConv2d,
    SparsyLinear,
    inverse_power_transform,
    power_transform,
    reset_activation_thresholds,
    topk_keep,
)


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_power_transform_round_trips_with_inverse_init():
    u = torch.randn(1000, generator=gen(), dtype=torch.float64)
    for beta in (0.5, 1.0, 1.25, 2.0):
        assert torch.allclose(power_transform(inverse_power_transform(u, beta), beta), u)


def test_layer_starts_at_the_standard_init_and_forward_is_not_in_place():
    layer = SparsyLinear(64, 32, beta=1.25, act_prune=True, gen=gen())
    theta = layer.theta().detach()
    std = math.sqrt(1 / 64) / 0.8796
    assert abs(float(theta.std()) - 0.88 * std) < 0.15 * std  # truncated at 2 sigma
    assert float(theta.abs().max()) <= 2 * std + 1e-6
    omega = layer.weight.detach().clone()
    for _ in range(3):
        layer(torch.randn(4, 64))
    assert torch.equal(layer.weight.detach(), omega)


def test_gradient_identity_dl_domega():
    """dL/domega = beta |omega|^(beta-1) dL/dtheta, checked against autograd and gradcheck."""
    beta = 1.25
    omega = torch.randn(50, generator=gen(1), dtype=torch.float64, requires_grad=True)
    c = torch.randn(50, generator=gen(2), dtype=torch.float64)
    theta = power_transform(omega, beta)
    (theta * c).sum().backward()  # dL/dtheta = c
    expected = beta * omega.detach().abs() ** (beta - 1) * c
    assert torch.allclose(omega.grad, expected)
    away_from_zero = (omega.detach() + 0.1).requires_grad_()
    assert torch.autograd.gradcheck(lambda w: power_transform(w, beta), (away_from_zero,))


def test_topk_keeps_exactly_ceil_largest_without_ties():
    x = torch.randn(7, 13, generator=gen(3))
    for s in (0.0, 0.3, 0.9, 0.95, 0.999):
        kept = topk_keep(x, 1 - s)
        k = math.ceil((1 - s) * x.numel() - 1e-9)
        assert int((kept != 0).sum()) == k
        threshold = x.abs().flatten().sort(descending=True).values[k - 1]
        assert torch.equal(kept != 0, x.abs() >= threshold)
        assert torch.equal(kept[kept != 0], x[kept != 0])


def test_topk_keeps_every_tie_at_the_threshold_as_the_official():
    """The official `matrix_drop` keeps |x| >= the k-th value: ties can exceed k entries."""
    x = torch.tensor([3.0, -3.0, 3.0, 1.0, 0.0, 0.0])
    assert torch.equal(topk_keep(x, 2 / 6), torch.tensor([3.0, -3.0, 3.0, 0.0, 0.0, 0.0]))
    relu_out = torch.tensor([2.0, 0.0, 0.0, 0.0])  # k = 3 reaches the zeros: all kept, harmless
    assert torch.equal(topk_keep(relu_out, 0.75), relu_out)


@pytest.mark.parametrize(("beta", "act_prune"), [(1.25, True), (1.25, False)])
def test_pruned_omega_gets_zero_gradient_and_stays_zero(beta, act_prune):
    """dL/domega = beta |omega|^(beta-1) dL/dtheta is 0 at omega = 0 for beta > 1, so SGD with
    weight decay never revives a pruned weight; with beta = 1 (Top-K) the same zeros move."""
    for b, revives in ((beta, False), (1.0, True)):
        layer = SparsyConv2d(2, 3, 3, beta=b, act_prune=act_prune, gen=gen(), padding=1)
        with torch.no_grad():
            layer.weight.view(-1)[::3] = 0.0
        zeros = layer.weight.detach() == 0
        opt = torch.optim.SGD(layer.parameters(), lr=0.5, weight_decay=1e-3)
        for step in range(3):
            opt.zero_grad()
            layer(torch.randn(4, 2, 5, 5, generator=gen(step))).pow(2).sum().backward()
            if not revives:
                assert torch.all(layer.weight.grad[zeros] == 0)
            opt.step()
        assert bool((layer.weight.detach()[zeros] != 0).any()) == revives


def test_conv_caches_the_first_batch_threshold_until_reset():
    """As the official `in_threshold`: batch 1 sets the |x| threshold, later batches reuse it."""
    conv = SparsyConv2d(2, 3, 3, beta=1.25, act_prune=True, gen=gen(), padding=1)
    with torch.no_grad():
        conv.weight.view(-1)[:27] = 0.0  # s_l = 0.5
    x1 = torch.randn(2, 2, 4, 4, generator=gen(1))
    conv(x1)
    first = conv.in_threshold
    assert first == pytest.approx(float(x1.abs().flatten().sort(descending=True).values[31]))
    conv(10 * torch.randn(2, 2, 4, 4, generator=gen(2)))
    assert conv.in_threshold == first
    reset_activation_thresholds(nn.Sequential(conv))
    assert conv.in_threshold is None


def _pair(sparse: nn.Module, dense: nn.Module, x: torch.Tensor):
    with torch.no_grad():
        dense.weight.copy_(sparse.theta())
        dense.bias.copy_(sparse.bias)
    xs, xd = x.clone().requires_grad_(), x.clone().requires_grad_()
    ys, yd = sparse(xs), dense(xd)
    g = torch.randn(ys.shape, generator=gen(9), dtype=ys.dtype)
    (ys * g).sum().backward()
    (yd * g).sum().backward()
    return ys, yd, xs, xd


def test_custom_layers_match_torch_at_sparsity_zero():
    """beta = 1 and a dense layer (s_l = 0): outputs and all gradients equal nn.Linear/Conv2d."""
    lin = SparsyLinear(6, 5, beta=1.0, act_prune=True, gen=gen()).double()
    ys, yd, xs, xd = _pair(lin, nn.Linear(6, 5).double(), torch.randn(4, 6, dtype=torch.float64))
    assert torch.allclose(ys, yd) and torch.allclose(xs.grad, xd.grad)
    conv = SparsyConv2d(3, 4, 3, beta=1.0, act_prune=True, gen=gen(), padding=1).double()
    ref = nn.Conv2d(3, 4, 3, padding=1).double()
    ys, yd, xs, xd = _pair(conv, ref, torch.randn(2, 3, 5, 5, dtype=torch.float64))
    assert torch.allclose(ys, yd) and torch.allclose(xs.grad, xd.grad)
    assert torch.allclose(conv.weight.grad, ref.weight.grad)
    assert torch.allclose(conv.bias.grad, ref.bias.grad)


def test_pruned_layers_use_topk_input_for_weight_grad_only():
    """With s_l = 0.5 the weight gradient is g^T x~ and dL/dx = g theta (dense forward)."""
    lin = SparsyLinear(8, 4, beta=1.0, act_prune=True, gen=gen()).double()
    with torch.no_grad():
        lin.weight.view(-1)[::2] = 0.0  # s_l = 0.5
    x = torch.randn(3, 8, generator=gen(4), dtype=torch.float64, requires_grad=True)
    y = lin(x)
    assert torch.allclose(y, x @ lin.weight.t() + lin.bias)
    g = torch.randn(3, 4, generator=gen(5), dtype=torch.float64)
    (y * g).sum().backward()
    x_pruned = topk_keep(x.detach(), 0.5)
    assert torch.allclose(lin.weight.grad, g.t() @ x_pruned)
    assert torch.allclose(x.grad, g @ lin.weight.detach())
    conv = SparsyConv2d(2, 3, 3, beta=1.0, act_prune=True, gen=gen(), padding=1).double()
    with torch.no_grad():
        conv.weight.view(-1)[:40] = 0.0  # s_l = 40/54
    xc = torch.randn(2, 2, 4, 4, generator=gen(6), dtype=torch.float64)
    out = conv(xc)
    gc = torch.randn(out.shape, generator=gen(7), dtype=torch.float64)
    (out * gc).sum().backward()
    ref = nn.Conv2d(2, 3, 3, padding=1).double()
    with torch.no_grad():
        ref.weight.copy_(conv.weight)
    (ref(topk_keep(xc, 1 - 40 / 54)) * gc).sum().backward()
    assert torch.allclose(conv.weight.grad, ref.weight.grad)


def test_eval_mode_turns_activation_pruning_off():
    lin = SparsyLinear(8, 4, beta=1.25, act_prune=True, gen=gen())
    with torch.no_grad():
        lin.weight.view(-1)[::2] = 0.0
    assert lin.keep_ratio(lin.theta()) == pytest.approx(0.5)
    lin.eval()
    assert lin.keep_ratio(lin.theta()) == 1.0


@pytest.mark.parametrize("beta", [0.0, -1.25])
def test_bad_beta_is_a_clear_error(beta):
    with pytest.raises(ValueError, match="beta must be > 0"):
        build_model("mlp", beta, True, 0)
