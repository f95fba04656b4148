"""Data generators, deterministic in the seed (template placeholder)."""

from __future__ import annotations

import torch


def linear_regression(n: int, dim: int, seed: int, noise: float = 0.1) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, dim, generator=g, dtype=torch.float64)
    w_true = torch.randn(dim, generator=g, dtype=torch.float64)
    y = x @ w_true + noise * torch.randn(n, generator=g, dtype=torch.float64)
    return x, y, w_true
