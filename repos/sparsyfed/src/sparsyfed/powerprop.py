"""SparsyFed's layers: Powerpropagation weights and backward-only activation pruning.

Section 3 of the paper (and `sparsyfed_modules.py` in the official code):

* Powerpropagation (Schwarz et al., 2021): the stored parameter is omega, every forward pass uses
  ``theta = sign(omega) * |omega|**beta`` (recomputed each time, never written back), so autograd
  gives ``dL/domega = beta * |omega|**(beta - 1) * dL/dtheta`` ("rich get richer").
* Activation pruning: the forward output uses the dense input x; for the weight gradient the layer
  keeps only the ``ceil((1 - s_l) * n)`` largest-magnitude entries of x (ties kept), where s_l is
  the current fraction of zeros of the layer's theta (adaptive per layer, no extra
  hyperparameter). Linear layers take a fresh top-k every batch; conv layers cache the first
  batch's threshold and reuse it, as the official `SparsyFedConv2D.in_threshold`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def power_transform(omega: torch.Tensor, beta: float) -> torch.Tensor:
    """theta = sign(omega) |omega|^beta (Powerpropagation re-parameterisation, out of place)."""
    if beta == 1.0:
        return omega
    return torch.sign(omega) * omega.abs().pow(beta)


def inverse_power_transform(theta: torch.Tensor, beta: float) -> torch.Tensor:
    """omega = sign(u) |u|^(1/beta): the initialisation that makes theta start equal to u."""
    return torch.sign(theta) * theta.abs().pow(1.0 / beta)


def truncated_normal_init(
    shape: tuple[int, ...], fan_in: int, gen: torch.Generator
) -> torch.Tensor:
    """Fan-in truncated normal, std sqrt(1/fan_in)/0.8796 clipped at +-2 sigma (paper's init)."""
    std = math.sqrt(1.0 / fan_in) / 0.87962566103423978
    out = torch.empty(shape)
    nn.init.trunc_normal_(out, 0.0, std, -2 * std, 2 * std, generator=gen)
    return out


def topk_threshold(x: torch.Tensor, keep: float) -> float:
    """|x| of the k-th largest entry, k = ceil(keep * n), over the whole tensor."""
    n = x.numel()
    k = min(n, max(1, math.ceil(keep * n - 1e-9)))
    return float(x.detach().abs().reshape(-1).topk(k, sorted=False).values.min())


def drop_below(x: torch.Tensor, threshold: float) -> torch.Tensor:
    """Copy of x with every entry of |x| < threshold set to zero (ties at it are kept)."""
    return x * (x.abs() >= threshold)


def topk_keep(x: torch.Tensor, keep: float) -> torch.Tensor:
    """x with the ceil(keep * n) largest |x| kept, and every tie at the k-th value too.

    As the official `matrix_drop` / `drop_nhwc_send_th` (a threshold, not an index set): when
    entries tie at the threshold all of them are kept, so the count can exceed k. After a ReLU
    the ties are zeros, which add nothing to the weight gradient.
    """
    if keep >= 1.0:
        return x
    return drop_below(x, topk_threshold(x, keep))


def zero_fraction(t: torch.Tensor) -> float:
    return float((t == 0).sum()) / t.numel()


class _SparseInputLinear(torch.autograd.Function):
    """y = x theta^T + b with dL/dtheta = g^T x~ (x~ = pruned x), dL/dx = g theta."""

    @staticmethod
    def forward(ctx, x, x_pruned, theta, bias):
        ctx.save_for_backward(x_pruned, theta)
        ctx.has_bias = bias is not None
        return F.linear(x, theta, bias)

    @staticmethod
    def backward(ctx, g):
        x_pruned, theta = ctx.saved_tensors
        g2 = g.reshape(-1, g.shape[-1])
        grad_theta = g2.t() @ x_pruned.reshape(-1, x_pruned.shape[-1])
        grad_bias = g2.sum(0) if ctx.has_bias else None
        grad_x = g @ theta if ctx.needs_input_grad[0] else None
        return grad_x, None, grad_theta, grad_bias


class _SparseInputConv2d(torch.autograd.Function):
    """Conv2d whose weight gradient sees the pruned input x~.

    One `convolution_backward` call on x~ gives both gradients: dL/dx depends only on the
    shape of the input, not on its values, so it is the dense layer's dL/dx.
    """

    @staticmethod
    def forward(ctx, x, x_pruned, theta, bias, stride, padding):
        ctx.save_for_backward(x_pruned, theta)
        ctx.conf = (stride, padding, bias is not None)
        return F.conv2d(x, theta, bias, stride, padding)

    @staticmethod
    def backward(ctx, g):
        x_pruned, theta = ctx.saved_tensors
        stride, padding, has_bias = ctx.conf
        grad_x, grad_theta, grad_bias = torch.ops.aten.convolution_backward(
            g.contiguous(),
            x_pruned,
            theta,
            [theta.shape[0]] if has_bias else None,
            list(stride),
            list(padding),
            [1, 1],
            False,
            [0, 0],
            1,
            [ctx.needs_input_grad[0], True, has_bias],
        )
        return grad_x, None, grad_theta, grad_bias if has_bias else None, None, None


class _SparsyMixin:
    """Shared state of the two layers: beta and whether activation pruning is on."""

    beta: float
    act_prune: bool
    weight: nn.Parameter

    def theta(self) -> torch.Tensor:
        return power_transform(self.weight, self.beta)

    def keep_ratio(self, theta: torch.Tensor) -> float:
        """1 - s_l, s_l = current zero fraction of this layer's theta (1.0 when pruning is off)."""
        if not (self.act_prune and self.training):
            return 1.0
        return 1.0 - zero_fraction(theta.detach())


class SparsyLinear(_SparsyMixin, nn.Linear):
    """nn.Linear with Powerpropagation weights and backward-only activation pruning."""

    def __init__(self, d_in: int, d_out: int, beta: float, act_prune: bool, gen: torch.Generator):
        super().__init__(d_in, d_out)
        self.beta, self.act_prune = beta, act_prune
        with torch.no_grad():
            u = truncated_normal_init((d_out, d_in), d_in, gen)
            self.weight.copy_(inverse_power_transform(u, beta))
            self.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        theta = self.theta()
        keep = self.keep_ratio(theta)
        if keep >= 1.0:
            return F.linear(x, theta, self.bias)
        return _SparseInputLinear.apply(x, topk_keep(x.detach(), keep), theta, self.bias)


class SparsyConv2d(_SparsyMixin, nn.Conv2d):
    """nn.Conv2d with Powerpropagation weights and backward-only activation pruning."""

    def __init__(
        self,
        c_in: int,
        c_out: int,
        kernel: int,
        beta: float,
        act_prune: bool,
        gen: torch.Generator,
        stride: int = 1,
        padding: int = 0,
        bias: bool = True,
    ):
        super().__init__(c_in, c_out, kernel, stride=stride, padding=padding, bias=bias)
        self.beta, self.act_prune = beta, act_prune
        # |x| threshold of the first pruned batch, reused by the later batches of one local
        # training (official `in_threshold`); `reset_activation_thresholds` clears it.
        self.in_threshold: float | None = None
        with torch.no_grad():
            u = truncated_normal_init(tuple(self.weight.shape), c_in * kernel * kernel, gen)
            self.weight.copy_(inverse_power_transform(u, beta))
            if self.bias is not None:
                self.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        theta = self.theta()
        keep = self.keep_ratio(theta)
        if keep >= 1.0:
            return F.conv2d(x, theta, self.bias, self.stride, self.padding)
        if self.in_threshold is None:  # first pruned batch of this local training
            self.in_threshold = topk_threshold(x, keep)
        x_pruned = drop_below(x.detach(), self.in_threshold)
        return _SparseInputConv2d.apply(x, x_pruned, theta, self.bias, self.stride, self.padding)


def reset_activation_thresholds(model: nn.Module) -> None:
    """Forget the cached conv thresholds (the official client rebuilds its net every round)."""
    for _, m in sparsy_layers(model):
        if isinstance(m, SparsyConv2d):
            m.in_threshold = None


def sparsy_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The prunable layers (their `weight` is omega); biases and norms are never pruned."""
    return [(n, m) for n, m in model.named_modules() if isinstance(m, SparsyLinear | SparsyConv2d)]
