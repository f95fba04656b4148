"""DPO baselines on the same implicit rewards r = beta * log pi/pi_ref (B, N) and scores (B, N)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def dpo_loss(chosen: torch.Tensor, rejected: torch.Tensor) -> torch.Tensor:
    """DPO (Rafailov et al., Eq. 7): -log sigma(r_w - r_l), averaged over pairs."""
    return -F.logsigmoid(chosen - rejected).mean()


def dpo_gold_vs_worst(rewards: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """DPO on the best- and worst-scored response of each tree (the official DPODataset)."""
    rows = torch.arange(rewards.shape[0], device=rewards.device)
    return dpo_loss(rewards[rows, scores.argmax(-1)], rewards[rows, scores.argmin(-1)])


def dpo_all_pairs(rewards: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """DPO averaged over every ordered pair v_i > v_j of each tree (unweighted)."""
    better = (scores[:, :, None] > scores[:, None, :]).to(rewards.dtype)
    pair_loss = -F.logsigmoid(rewards[:, :, None] - rewards[:, None, :])
    return ((better * pair_loss).sum() / better.sum().clamp_min(1.0)).to(rewards.dtype)
