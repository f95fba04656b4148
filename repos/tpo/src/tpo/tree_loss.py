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


def ranked_pair_loss(
    margins: torch.Tensor, rank_rewards: torch.Tensor, scores: torch.Tensor, weighted: bool = True
) -> torch.Tensor:
    """-sum_{v_i > v_j} lambda_ij log sigma(m_ij) / sum lambda_ij per list, averaged over lists.
    margins (B, N, N) hold m_ij = r_i - r_j (or ASR's step-weighted margin); lambda uses the ranks
    of rank_rewards (B, N). weighted=False sets lambda = 1 (the plain list-wise RankNet loss)."""
    check_lists(scores)
    better = (scores[:, :, None] > scores[:, None, :]).to(margins.dtype)
    lam = lambda_weights(rank_rewards, scores) if weighted else torch.ones_like(better)
    lam = lam * better
    per_list = (lam * -F.logsigmoid(margins)).sum((1, 2)) / lam.sum((1, 2)).clamp_min(1e-12)
    return per_list.mean()


def plr_loss(rewards: torch.Tensor, scores: torch.Tensor, weighted: bool = True) -> torch.Tensor:
    """Preference List Ranking (paper, PLR): -sum_{v_i > v_j} lambda_ij log sigma(r_i - r_j),
    normalised by sum lambda_ij per list (a constant, so at N = 2 it is exactly DPO's loss)."""
    return ranked_pair_loss(rewards[:, :, None] - rewards[:, None, :], rewards, scores, weighted)


def step_sums(values: torch.Tensor, step_ids: torch.Tensor, n_steps: int) -> torch.Tensor:
    """Sum of per-token values inside each step: (B, L) -> (B, K); tokens with step -1 ignored."""
    onehot = (step_ids[..., None] == torch.arange(n_steps, device=step_ids.device)).to(values.dtype)
    return torch.einsum("bl,blk->bk", values, onehot)


def step_means(states: torch.Tensor, step_ids: torch.Tensor, n_steps: int) -> torch.Tensor:
    """Mean hidden state over each step's tokens: (B, L, d) -> (B, K, d); empty steps are zero."""
    onehot = (step_ids[..., None] == torch.arange(n_steps, device=step_ids.device)).to(states.dtype)
    total = torch.einsum("bld,blk->bkd", states, onehot)
    return total / onehot.sum(1)[..., None].clamp_min(1.0)


def merge_tail(
    step_log_ratios: torch.Tensor, states: torch.Tensor | None, counts: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """The official dataset.py step alignment: in each list, every step past the smallest step
    count S of its responses joins step S (0-based: index S - 1). Summed log-ratios and token
    counts add up; step-mean hidden states become the token-weighted mean of the merged steps.
    Shapes (B, N, K), (B, N, K, d) or None, (B, N, K); returns the same shapes."""
    k = counts.shape[-1]
    last = (counts > 0).sum(-1).min(-1).values.clamp_min(1) - 1  # (B,) index S - 1
    cols = torch.arange(k, device=counts.device)
    target = torch.minimum(cols[None, :], last[:, None])  # (B, K): where each step goes
    onehot = (target[:, :, None] == cols[None, None, :]).to(step_log_ratios.dtype)  # (B, K, K)
    merged_ratio = torch.einsum("bnk,bkj->bnj", step_log_ratios, onehot)
    merged_counts = torch.einsum("bnk,bkj->bnj", counts.to(onehot.dtype), onehot)
    if states is None:
        return merged_ratio, None, merged_counts.to(counts.dtype)
    weighted = states * counts[..., None].to(states.dtype)
    total = torch.einsum("bnkd,bkj->bnjd", weighted, onehot.to(states.dtype))
    merged_states = total / merged_counts[..., None].clamp_min(1.0).to(states.dtype)
    return merged_ratio, merged_states, merged_counts.to(counts.dtype)


def step_similarity(h: torch.Tensor, valid: torch.Tensor, anchor: torch.Tensor) -> torch.Tensor:
    """cos(h_{n,k}, h_{a,k}) between step k of response n and step k of the anchor response a
    of its list; 0 where either lacks step k. h: (B, N, K, d); anchor: (B,) indices."""
    rows = torch.arange(h.shape[0])
    cos = F.cosine_similarity(h, h[rows, anchor][:, None], dim=-1, eps=1e-8)
    both = valid & valid[rows, anchor][:, None]
    return torch.where(both, cos, torch.zeros_like(cos))


def pair_step_similarity(h: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """cos(h_{i,k}, h_{j,k}) for every pair (i, j) of a list at every step k: (B, N, N, K);
    0 where either response lacks step k."""
    unit = F.normalize(h, dim=-1, eps=1e-8)
    cos = torch.einsum("bikd,bjkd->bijk", unit, unit)
    both = valid[:, :, None] & valid[:, None, :]
    return torch.where(both, cos, torch.zeros_like(cos))


def asr_pair_margins(
    step_log_ratios: torch.Tensor, states: torch.Tensor, valid: torch.Tensor, beta: float
) -> torch.Tensor:
    """Adaptive Step Reward, paper form (pairwise): the margin of response i over j is
    m_ij = beta * sum_k w_ijk (l_ik - l_jk), w_ijk = 1 - cos(h_ik, h_jk) + ASR_FLOOR normalised
    to mean 1 over the steps either response holds. Steps two responses share have equal l and
    add nothing, so the margin moves to the steps where they differ (the paper's aim); both
    responses get the same weight on a step, so every pair still pushes i up and j down, as
    DPO does. Weights carry no gradient. l: (B, N, K) summed log-ratios; states (B, N, K, d)."""
    with torch.no_grad():
        either = (valid[:, :, None] | valid[:, None, :]).to(step_log_ratios.dtype)
        w = (1.0 - pair_step_similarity(states, valid) + ASR_FLOOR) * either
        mean = w.sum(-1, keepdim=True) / either.sum(-1, keepdim=True).clamp_min(1.0)
        w = w / mean.clamp_min(1e-12)
    diff = step_log_ratios[:, :, None] - step_log_ratios[:, None, :]
    return beta * (w * diff).sum(-1)


def asr_rewards(
    step_log_ratios: torch.Tensor,
    states: torch.Tensor,
    counts: torch.Tensor,
    scores: torch.Tensor,
    beta: float,
    variant: str,
) -> torch.Tensor:
    """Per-response ASR rewards (B, N), the two ablations of the pairwise paper form.
    'code' (official loss.py): w_nk = 1 + cos(h_nk, h_0k) against response 0, with gradient
    through the hidden states; r_n = beta * sum_k w_nk m_nk / sum_k w_nk over steps both hold,
    m_nk the token-mean log-ratio of step k. 'anchor' (our first pass): w = 1 - cos + ASR_FLOOR
    against the best-scored response, normalised to mean 1 per response, no gradient, times the
    summed log-ratio. counts (B, N, K): tokens of each step (0 = the response lacks it)."""
    valid = counts > 0
    if variant == "code":
        anchor = torch.zeros(scores.shape[0], dtype=torch.long, device=scores.device)
        cos = step_similarity(states, valid, anchor)
        both = valid & valid[:, :1]
        w = (1.0 + cos) * both
        means = step_log_ratios / counts.clamp_min(1)
        return beta * (w * means).sum(-1) / w.sum(-1).clamp_min(1e-12)
    if variant != "anchor":
        raise ValueError(f"ASR variant must be 'code' or 'anchor', got {variant!r}")
    with torch.no_grad():
        cos = step_similarity(states, valid, scores.argmax(-1))
        w = (1.0 - cos + ASR_FLOOR) * valid
        mean = w.sum(-1, keepdim=True) / valid.sum(-1, keepdim=True).clamp_min(1)
        w = w / mean.clamp_min(1e-12)
    return beta * (w * step_log_ratios).sum(-1)


def tpo_loss(
    step_log_ratios: torch.Tensor,
    states: torch.Tensor,
    counts: torch.Tensor,
    scores: torch.Tensor,
    beta: float,
    asr: str = "paper",
    step_merge: str = "none",
) -> torch.Tensor:
    """TPO = PLR over ASR margins. asr='paper' is the pairwise form (lambda from the plain
    implicit rewards' ranks); 'code' and 'anchor' feed per-response ASR rewards into PLR.
    step_merge='official' first merges each list's steps past its smallest step count."""
    if step_merge == "official":
        step_log_ratios, states, counts = merge_tail(step_log_ratios, states, counts)
    elif step_merge != "none":
        raise ValueError(f"step_merge must be 'none' or 'official', got {step_merge!r}")
    if asr == "paper":
        margins = asr_pair_margins(step_log_ratios, states, counts > 0, beta)
        return ranked_pair_loss(margins, beta * step_log_ratios.sum(-1), scores)
    return plr_loss(asr_rewards(step_log_ratios, states, counts, scores, beta, asr), scores)
