"""The alignment objectives F(q) and their first variations dF/dq (paper Sec. 3, Eq. for L(q)).

L(q) = F(q) + beta KL(q || p_ref), with rho_q = log(q / p_ref) and three choices of F:

* RLHF: F(q) = -E_q[r]; first variation -r (linear, so q* ~ p_ref e^{r/beta}).
* DPO:  F(q) = E_{(x_w, x_l)}[-log sigmoid(beta_d (rho_q(x_w) - rho_q(x_l)))], pairs drawn from
  p_ref x p_ref and labelled by a Bradley-Terry oracle; we use the oracle's probabilities
  (the expected label), which is the population objective.
* KTO:  F(q) = E_{x ~ p_ref}[d(x)(1 - s(beta_d rho)) + (1 - d(x))(1 - s(-beta_d rho))] with
  desirability d(x) = sigmoid(r(x)) and the reference point z_0 = 0.

Two representations: a discrete distribution (weights on atoms; used for grid quadrature and the
finite-difference test) and Monte-Carlo estimates on reference samples (used by dual averaging).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F_nn

OBJECTIVES = ("dpo", "rlhf", "kto")


def reward(x: torch.Tensor, target: torch.Tensor, temperature: float) -> torch.Tensor:
    """Oracle reward r(x) = -||x - mu*|| / temperature (closer to the target mode is better)."""
    return -(x - target.to(x.dtype)).norm(dim=-1) / temperature


def preference_prob(r_win: torch.Tensor, r_lose: torch.Tensor) -> torch.Tensor:
    """Bradley-Terry P(x_win > x_lose) = sigmoid(r(x_win) - r(x_lose))."""
    return torch.sigmoid(r_win - r_lose)


def check_pairs(x_w: torch.Tensor, x_l: torch.Tensor) -> None:
    """Preference pairs must be two tensors of identical shape (n, d)."""
    if x_w.shape != x_l.shape or x_w.dim() != 2:
        raise ValueError(
            f"preference pairs need winners and losers of equal shape (n, d); "
            f"got {tuple(x_w.shape)} and {tuple(x_l.shape)}"
        )


# ---------------------------------------------------------------- discrete distributions (grid)


def discrete_F(
    kind: str,
    q: torch.Tensor,
    p: torch.Tensor,
    r: torch.Tensor,
    beta_d: float,
    pref: torch.Tensor | None = None,
) -> torch.Tensor:
    """F(q) for weights q on atoms with reference weights p and rewards r.

    pref optionally holds the precomputed matrix P(i > j) (DPO), which does not depend on q.
    """
    rho = torch.log(q) - torch.log(p)
    if kind == "rlhf":
        return -(q * r).sum()
    if kind == "kto":
        d = torch.sigmoid(r)
        s = torch.sigmoid(beta_d * rho)
        return (p * (d * (1 - s) + (1 - d) * s)).sum()
    if kind == "dpo":
        pref = preference_prob(r[:, None], r[None, :]) if pref is None else pref
        loss = -F_nn.logsigmoid(beta_d * (rho[:, None] - rho[None, :]))
        return 2 * (p[:, None] * p[None, :] * pref * loss).sum()
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {kind!r}")


def discrete_first_variation(
    kind: str, q: torch.Tensor, p: torch.Tensor, r: torch.Tensor, beta_d: float
) -> torch.Tensor:
    """dF/dq_y on atoms, written out (the closed forms the continuous estimator below uses)."""
    rho = torch.log(q) - torch.log(p)
    if kind == "rlhf":
        return -r
    ratio = p / q  # p_ref / q: the normaliser Z e^{f} of the continuous form
    if kind == "kto":
        s = torch.sigmoid(beta_d * rho)
        return ratio * beta_d * s * (1 - s) * (1 - 2 * torch.sigmoid(r))
    if kind == "dpo":
        delta = rho[:, None] - rho[None, :]
        pref = preference_prob(r[:, None], r[None, :])
        inner = -pref * torch.sigmoid(-beta_d * delta) + (1 - pref) * torch.sigmoid(beta_d * delta)
        return 2 * beta_d * ratio * (inner * p[None, :]).sum(1)
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {kind!r}")


def discrete_objective(
    kind: str,
    q: torch.Tensor,
    p: torch.Tensor,
    r: torch.Tensor,
    beta: float,
    beta_d: float,
    pref: torch.Tensor | None = None,
) -> torch.Tensor:
    """L(q) = F(q) + beta KL(q || p) on atoms."""
    return (
        discrete_F(kind, q, p, r, beta_d, pref) + beta * (q * (torch.log(q) - torch.log(p))).sum()
    )


# ------------------------------------------------- Monte Carlo on reference samples (continuous)


def first_variation_mc(
    kind: str,
    f_y: torch.Tensor,
    r_y: torch.Tensor,
    f_ref: torch.Tensor,
    r_ref: torch.Tensor,
    beta_d: float,
    chunk: int = 2048,
) -> torch.Tensor:
    """g(y) = dF/dq(q_f)(y) for q_f ~ p_ref e^{-f}, from reference samples x' (f_ref, r_ref).

    DPO: g(y) = 2 beta_d Z e^{f(y)} E_{x'}[-P(y > x') s(-beta_d D) + P(x' > y) s(beta_d D)],
    D = rho(y) - rho(x') = f(x') - f(y), with the normaliser Z = E_{p_ref}[e^{-f}] estimated
    from the same reference samples (log-sum-exp, so large f cannot overflow). The pair
    matrix is built `chunk` rows at a time so that large sample sizes fit in memory.
    """
    log_z = torch.logsumexp(-f_ref, 0) - torch.log(torch.tensor(float(f_ref.numel())))
    ratio = torch.exp(f_y + log_z)
    if kind == "rlhf":
        return -r_y
    if kind == "kto":
        s = torch.sigmoid(beta_d * (-f_y - log_z))
        return ratio * beta_d * s * (1 - s) * (1 - 2 * torch.sigmoid(r_y))
    if kind == "dpo":
        inner = torch.cat([
            _dpo_inner(f_y[i : i + chunk], r_y[i : i + chunk], f_ref, r_ref, beta_d)
            for i in range(0, f_y.numel(), chunk)
        ])  # fmt: skip
        return 2 * beta_d * ratio * inner
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {kind!r}")


def _dpo_inner(f_y, r_y, f_ref, r_ref, beta_d: float) -> torch.Tensor:
    """E_{x'}[-P(y > x') s(-beta_d D) + P(x' > y) s(beta_d D)] for a block of y's."""
    delta = f_ref[None, :] - f_y[:, None]
    pref = preference_prob(r_y[:, None], r_ref[None, :])
    inner = -pref * torch.sigmoid(-beta_d * delta) + (1 - pref) * torch.sigmoid(beta_d * delta)
    return inner.mean(1)


def pairwise_dpo_loss(f_w: torch.Tensor, f_l: torch.Tensor, beta_d: float) -> torch.Tensor:
    """Held-out DPO loss of a potential on labelled pairs: -log s(beta_d (f(x_l) - f(x_w)))."""
    if f_w.shape != f_l.shape:
        raise ValueError(f"winner and loser potentials differ in shape: {f_w.shape} vs {f_l.shape}")
    return -F_nn.logsigmoid(beta_d * (f_l - f_w)).mean()
