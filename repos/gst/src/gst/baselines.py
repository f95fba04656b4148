"""Baselines. NVS-only and pose-only are the same decoder trained on one segment of one order
(sequence.TRAINED); here is the sanity floor: a CNN regressing the relative rotation directly."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def rotation_from_6d(x: torch.Tensor) -> torch.Tensor:
    """Zhou et al. 6-D representation -> rotation matrix by Gram-Schmidt; rows are the basis."""
    a, b = x[..., :3], x[..., 3:]
    e1 = F.normalize(a, dim=-1)
    e2 = F.normalize(b - (e1 * b).sum(-1, keepdim=True) * e1, dim=-1)
    e3 = torch.cross(e1, e2, dim=-1)
    return torch.stack([e1, e2, e3], dim=-2)


class PoseCNN(nn.Module):
    """Observation and target images stacked on channels -> (relative rotation, camera centre)."""

    def __init__(self, width: int):
        super().__init__()
        layers: list[nn.Module] = []
        ch = 6
        for k in range(3):
            layers += [nn.Conv2d(ch, width * 2**k, 3, stride=2, padding=1), nn.SiLU()]
            ch = width * 2**k
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Sequential(nn.Linear(ch, 128), nn.SiLU(), nn.Linear(128, 9))

    def forward(self, obs: torch.Tensor, tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """obs, tgt: (B, 3, S, S) -> (R (B, 3, 3), centre (B, 3))."""
        out = self.head(self.features(torch.cat([obs, tgt], dim=1)))
        return rotation_from_6d(out[:, :6]), out[:, 6:]


def pose_cnn_loss(model: PoseCNN, obs, tgt, r_true, c_true) -> torch.Tensor:
    """Squared Frobenius error of the rotation plus squared centre error."""
    r, c = model(obs, tgt)
    return ((r - r_true) ** 2).sum((-1, -2)).mean() + ((c - c_true) ** 2).sum(-1).mean()
