"""Comparison methods, with the same interface as the method (template placeholder)."""

from __future__ import annotations

import torch


def closed_form(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Exact least squares via torch.linalg.lstsq."""
    return torch.linalg.lstsq(x, y.unsqueeze(1)).solution.squeeze(1)
