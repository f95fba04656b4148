"""The training target Q(x+|x) of GenRe (paper Eq. for Q; official data/pair_data.py).

    Q(x+ | x)  ~  P(x+) 1[x+ in D+] exp(-lambda ||x - x+||_1),   immutables of x+ equal to x's.

P(x+) is the empirical distribution, so Q over the members of D+ is a softmax of
-lambda * L1 distance, with inadmissible partners (different immutable features) masked out,
truncated to the top-K partners. Distances are computed in chunks: the full |D-| x |D+|
matrix need not fit in memory.
"""

from __future__ import annotations

import warnings

import torch

from .binned_transformer import project


def partner_sets(
    x: torch.Tensor,
    x_pos: torch.Tensor,
    lam: float,
    top_k: int,
    immutable: torch.Tensor,
    chunk: int = 1024,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Top-K partners of each row of x in x_pos and their probabilities under Q.

    Returns (index [n, K], prob [n, K], has_partner [n]). A row without any admissible
    partner gets all-zero probabilities (never NaN) and a warning naming how many.
    """
    k = min(top_k, len(x_pos))
    idx_out, prob_out = [], []
    for start in range(0, len(x), chunk):
        xs = x[start : start + chunk]
        logits = -lam * torch.cdist(xs, x_pos, p=1)
        if immutable.any():
            same = (xs[:, None, immutable] == x_pos[None, :, immutable]).all(-1)
            logits = logits.masked_fill(~same, float("-inf"))
        top, idx = logits.topk(k, dim=1)
        finite = torch.isfinite(top)
        prob = torch.where(finite, top - top[:, :1], -torch.inf).exp()  # stable softmax
        prob = torch.where(finite, prob, 0.0)
        prob = prob / prob.sum(1, keepdim=True).clamp_min(1e-30)
        idx_out.append(idx)
        prob_out.append(prob)
    prob = torch.cat(prob_out)
    has_partner = prob.sum(1) > 0
    if not has_partner.all():
        warnings.warn(
            f"{int((~has_partner).sum())} of {len(x)} negatives have no admissible partner in D+ "
            "(no positive shares their immutable features); they are left out",
            stacklevel=2,
        )
    return torch.cat(idx_out), prob, has_partner


def sample_partners(
    index: torch.Tensor, prob: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """One partner per row, drawn from Q (official: resampled once per epoch)."""
    pick = torch.multinomial(prob, 1, generator=generator).squeeze(1)
    return index.gather(1, pick[:, None]).squeeze(1)


def q_recourse(
    x: torch.Tensor,
    x_pos: torch.Tensor,
    lam: float,
    top_k: int,
    immutable: torch.Tensor,
    categorical: torch.Tensor,
    h,
    best_k: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """Recourse drawn from the target Q itself, with GenRe's inference around it: best_k
    partners per negative from Q(.|x) (top-K, lambda), projected, the one h scores highest
    returned. With lam = GenRe's lambda this is GenRe's oracle (a perfect R_theta = Q); with
    lam -> 0, top_k = |D+| and best_k = 1 it is a uniform admissible positive (a floor).
    A negative without an admissible partner keeps x (it counts as not valid)."""
    index, prob, has = partner_sets(x, x_pos, lam, top_k, immutable)
    prob = torch.where(has[:, None], prob, 1.0)  # rows without partner: any draw, replaced below
    pick = torch.multinomial(prob, best_k, replacement=True, generator=generator)
    cand = x_pos[index.gather(1, pick)]  # [n, best_k, d]
    rep = x[:, None].expand_as(cand).reshape(-1, x.shape[1])
    cand = project(cand.reshape(-1, x.shape[1]), rep, immutable, categorical).view_as(cand)
    with torch.no_grad():
        best = h(cand).argmax(1)
    out = cand[torch.arange(len(x)), best]
    return torch.where(has[:, None], out, x)
