"""TPO's contribution as pure functions: Preference List Ranking (PLR) and Adaptive Step Reward (ASR).

Shapes: a batch of B preference lists of N responses; `rewards` (B, N) are implicit rewards
r_i = beta * log pi(y_i|x) / pi_ref(y_i|x) (the paper's implicit reward, as in DPO); `scores` (B, N) are the
judge's values v_i in [-100, 100].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

ASR_FLOOR = 0.1
"""Added to the paper-direction weight 1 - cos so a step identical to the anchor keeps a small weight."""


def check_lists(scores: torch.Tensor) -> None:
    """A ranking needs >= 2 responses per list and finite scores; say so instead of returning 0/NaN."""
    if scores.ndim != 2 or scores.shape[1] < 2:
        raise ValueError(
            f"scores must be (lists, responses) with at least 2 responses per list, got shape "
            f"{tuple(scores.shape)}"
        )
    if not bool(torch.isfinite(scores).all()):
        raise ValueError("scores must be finite numbers (got NaN or inf)")


def gains(scores: torch.Tensor) -> torch.Tensor:
    """LambdaRank gain G = 2^v - 1 on scores rescaled from [-100, 100] to [0, 1] (raw 2^100
    overflows in low precision; the paper studies the reward-value scale separately)."""
    return torch.exp2((scores + 100.0) / 200.0) - 1.0


def current_ranks(rewards: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """tau_i: 1-based rank of response i when sorted by current reward (descending). Reward ties
    (e.g. at initialisation, when pi = pi_ref) fall back to the score order, so the ranks do not
    depend on the order of the list."""
    by_score = torch.sort(scores, dim=-1, descending=True, stable=True).indices
    r_sorted = rewards.gather(-1, by_score)
    order = by_score.gather(-1, torch.sort(r_sorted, dim=-1, descending=True, stable=True).indices)
    ranks = torch.empty_like(order)
    ranks.scatter_(
        -1, order, torch.arange(1, order.shape[-1] + 1, device=order.device).expand_as(order)
    )
    return ranks


def lambda_weights(rewards: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """lambda_ij = |G_i - G_j| * |1/D(tau_i) - 1/D(tau_j)|, D(tau) = log2(1 + tau): the change of
    DCG when i and j swap rank positions (paper, PLR; LambdaLoss/LiPO-lambda form). (B, N, N)."""
    g = gains(scores)
    inv_d = 1.0 / torch.log2(1.0 + current_ranks(rewards.detach(), scores).to(g.dtype))
    return (g[:, :, None] - g[:, None, :]).abs() * (inv_d[:, :, None] - inv_d[:, None, :]).abs()


def plr_loss(rewards: torch.Tensor, scores: torch.Tensor, weighted: bool = True) -> torch.Tensor:
    """Preference List Ranking (paper, PLR): -sum_{v_i > v_j} lambda_ij log sigma(r_i - r_j),
    normalised by sum lambda_ij per list (a constant, so at N = 2 it is exactly DPO's loss).
    weighted=False sets lambda = 1 (the plain list-wise RankNet loss)."""
    check_lists(scores)
    better = (scores[:, :, None] > scores[:, None, :]).to(rewards.dtype)
    lam = lambda_weights(rewards, scores) if weighted else torch.ones_like(better)
    lam = lam * better
    pair_loss = -F.logsigmoid(rewards[:, :, None] - rewards[:, None, :])
    per_list = (lam * pair_loss).sum((1, 2)) / lam.sum((1, 2)).clamp_min(1e-12)
    return per_list.mean()


def step_sums(values: torch.Tensor, step_ids: torch.Tensor, n_steps: int) -> torch.Tensor:
    """Sum of per-token values inside each step: (B, L) -> (B, K); tokens with step -1 ignored."""
    onehot = (step_ids[..., None] == torch.arange(n_steps, device=step_ids.device)).to(values.dtype)
    return torch.einsum("bl,blk->bk", values, onehot)


def step_means(states: torch.Tensor, step_ids: torch.Tensor, n_steps: int) -> torch.Tensor:
    """Mean hidden state over each step's tokens: (B, L, d) -> (B, K, d); empty steps are zero."""
    onehot = (step_ids[..., None] == torch.arange(n_steps, device=step_ids.device)).to(states.dtype)
    total = torch.einsum("bld,blk->bkd", states, onehot)
    return total / onehot.sum(1)[..., None].clamp_min(1.0)


def step_similarity(h: torch.Tensor, valid: torch.Tensor, anchor: torch.Tensor) -> torch.Tensor:
    """cos(h_{n,k}, h_{a,k}) between step k of response n and step k of the anchor response a
    (the best-scored one of its list); 0 where either lacks step k. h: (B, N, K, d)."""
    h_anchor = h[torch.arange(h.shape[0]), anchor]
    cos = F.cosine_similarity(h, h_anchor[:, None], dim=-1, eps=1e-8)
    both = valid & valid[torch.arange(h.shape[0]), anchor][:, None]
    return torch.where(both, cos, torch.zeros_like(cos))


def asr_weights(cos: torch.Tensor, valid: torch.Tensor, direction: str = "paper") -> torch.Tensor:
    """Adaptive Step Reward weights (paper Eq. 10), normalised to mean 1 over each response's steps.
    'paper': w = 1 - cos + ASR_FLOOR, so steps that differ from the anchor weigh more (the
    paper's aim: larger margins on discriminative steps). 'code': w = 1 + cos (official loss.py)."""
    if direction == "paper":
        w = 1.0 - cos + ASR_FLOOR
    elif direction == "code":
        w = 1.0 + cos
    else:
        raise ValueError(f"ASR direction must be 'paper' or 'code', got {direction!r}")
    w = w * valid
    mean = w.sum(-1, keepdim=True) / valid.sum(-1, keepdim=True).clamp_min(1)
    return w / mean.clamp_min(1e-12)


def asr_rewards(
    step_log_ratios: torch.Tensor,
    states: torch.Tensor,
    valid: torch.Tensor,
    scores: torch.Tensor,
    beta: float,
    direction: str = "paper",
) -> torch.Tensor:
    """Implicit rewards with adaptive step weights: r_n = beta * sum_k w_{n,k} l_{n,k}, where
    l_{n,k} is the summed log-ratio of step k. With equal weights this is the plain implicit reward.
    step_log_ratios: (B, N, K); states: (B, N, K, d) step-mean hidden states (weights carry no
    gradient); valid: (B, N, K) bool; scores: (B, N)."""
    anchor = scores.argmax(-1)
    with torch.no_grad():
        w = asr_weights(step_similarity(states, valid, anchor), valid, direction)
    return beta * (w * step_log_ratios).sum(-1)


def tpo_loss(
    step_log_ratios: torch.Tensor,
    states: torch.Tensor,
    valid: torch.Tensor,
    scores: torch.Tensor,
    beta: float,
    direction: str = "paper",
) -> torch.Tensor:
    """TPO = PLR over ASR-weighted implicit rewards."""
    return plr_loss(asr_rewards(step_log_ratios, states, valid, scores, beta, direction), scores)
