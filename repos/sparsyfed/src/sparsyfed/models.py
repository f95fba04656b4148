"""Models built from SparsyFed layers: MLP/CNN for digits (quick), a GroupNorm CNN for CIFAR-10-
shaped data (paper preset) and the CIFAR ResNet-18 (full).

With beta = 1 and activation pruning off the layers are plain conv/linear layers, which is how
the dense FedAvg and Top-K baselines use them.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn

from .powerprop import SparsyConv2d, SparsyLinear


class DigitsCNN(nn.Module):
    """conv 1->32 -> conv 32->64 -> 2x2 max-pool -> linear 1024->64 -> linear 64->10 (~85k w)."""

    def __init__(self, beta: float, act_prune: bool, gen: torch.Generator, n_classes: int = 10):
        super().__init__()
        kw = {"beta": beta, "act_prune": act_prune, "gen": gen}
        self.conv1 = SparsyConv2d(1, 32, 3, padding=1, **kw)
        self.conv2 = SparsyConv2d(32, 64, 3, padding=1, **kw)
        self.fc1 = SparsyLinear(64 * 4 * 4, 64, **kw)
        self.fc2 = SparsyLinear(64, n_classes, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


class DigitsMLP(nn.Module):
    """64 -> 256 -> 256 -> 10 multilayer perceptron (~84k weights).

    With `norm`, a GroupNorm (2 groups, the official ResNet-18's `groupnorm` option) follows each
    hidden layer, as a norm layer follows every conv of the paper's ResNet-18: it restores the
    activation scale that pruning 90% of a layer removes. Norm layers are never pruned.
    """

    def __init__(
        self,
        beta: float,
        act_prune: bool,
        gen: torch.Generator,
        n_classes: int = 10,
        norm: bool = False,
    ):
        super().__init__()
        kw = {"beta": beta, "act_prune": act_prune, "gen": gen}
        self.fc1 = SparsyLinear(64, 256, **kw)
        self.bn1 = nn.GroupNorm(2, 256) if norm else nn.Identity()
        self.fc2 = SparsyLinear(256, 256, **kw)
        self.bn2 = nn.GroupNorm(2, 256) if norm else nn.Identity()
        self.fc3 = SparsyLinear(256, n_classes, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.fc1(x.flatten(1))))
        return self.fc3(torch.relu(self.bn2(self.fc2(x))))


class CifarCNN(nn.Module):
    """Three stride-2 3x3 convs (3->w->2w->4w, 32->16->8->4 pixels), each followed by a GroupNorm
    (2 groups, the official ResNet-18's `groupnorm` option), global average pool, linear to the
    classes (~24k weights at w = 16): the paper's normalised conv setting at CPU size."""

    def __init__(self, beta: float, act_prune: bool, gen: torch.Generator, width: int = 16):
        super().__init__()
        kw = {"beta": beta, "act_prune": act_prune, "gen": gen}
        chans = (3, width, 2 * width, 4 * width)
        self.convs = nn.ModuleList(
            SparsyConv2d(a, b, 3, stride=2, padding=1, **kw) for a, b in itertools.pairwise(chans)
        )
        self.norms = nn.ModuleList(nn.GroupNorm(2, c) for c in chans[1:])
        self.fc = SparsyLinear(chans[-1], 10, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = torch.relu(norm(conv(x)))
        return self.fc(x.mean((2, 3)))


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int, kw: dict):
        super().__init__()
        self.conv1 = SparsyConv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False, **kw)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = SparsyConv2d(c_out, c_out, 3, padding=1, bias=False, **kw)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                SparsyConv2d(c_in, c_out, 1, stride=stride, bias=False, **kw),
                nn.BatchNorm2d(c_out),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 adapted to 32x32 inputs: 3x3 stem, no max-pool, BatchNorm (paper's model)."""

    def __init__(
        self,
        beta: float,
        act_prune: bool,
        gen: torch.Generator,
        n_classes: int = 10,
        width: int = 64,
    ):
        super().__init__()
        kw = {"beta": beta, "act_prune": act_prune, "gen": gen}
        self.stem = SparsyConv2d(3, width, 3, padding=1, bias=False, **kw)
        self.bn = nn.BatchNorm2d(width)
        blocks, c = [], width
        for i, mult in enumerate((1, 2, 4, 8)):
            for j in range(2):
                stride = 2 if i > 0 and j == 0 else 1
                blocks.append(BasicBlock(c, width * mult, stride, kw))
                c = width * mult
        self.blocks = nn.Sequential(*blocks)
        self.fc = SparsyLinear(c, n_classes, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(torch.relu(self.bn(self.stem(x))))
        return self.fc(x.mean((2, 3)))


def build_model(
    arch: str, beta: float, act_prune: bool, seed: int, resnet_width: int = 64
) -> nn.Module:
    """The architecture named by `arch` (mlp, mlp_gn, cnn, cifar_cnn_gn, resnet18) from `seed`."""
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    gen = torch.Generator().manual_seed(seed)
    if arch in ("mlp", "mlp_gn"):
        return DigitsMLP(beta, act_prune, gen, norm=arch == "mlp_gn")
    if arch == "cnn":
        return DigitsCNN(beta, act_prune, gen)
    if arch == "cifar_cnn_gn":
        return CifarCNN(beta, act_prune, gen)
    if arch == "resnet18":
        return ResNet18(beta, act_prune, gen, width=resnet_width)
    raise ValueError(f"arch must be one of mlp, mlp_gn, cnn, cifar_cnn_gn, resnet18, got {arch!r}")
