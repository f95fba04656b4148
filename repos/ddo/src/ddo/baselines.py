"""Comparison methods and the learned reference score.

* `ScoreNet` + `train_dsm`: the reference diffusion model learned by denoising score matching.
* `diffusion_dpo`: Diffusion-DPO fine-tuning of that score network on the same preference pairs
  (Wallace et al. 2023; the loss of diffusers' research example train_diffusion_dpo.py).
* `langevin`: ULA and MALA on log p_ref - f, started from reference samples (short run).
* `importance_resample`: self-normalised importance resampling of reference samples with
  weights e^{-f}; consistent, so it is also the sampling peer for speed and ESS.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable

import torch
import torch.nn.functional as F_nn
from torch import nn

from .h_transform import effective_sample_size
from .objectives import check_pairs
from .reference import ou_coefficients


class ScoreNet(nn.Module):
    """eps_theta(x_t, t): an MLP (3 x hidden) on [x, log t]; score = -eps / sqrt(v_t)."""

    def __init__(self, dim: int = 2, hidden: int = 128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim + 1, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim),
        )  # fmt: skip

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, torch.log(t)[..., None]], dim=-1))

    def score(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return eps_to_score(self, x, t)


def eps_to_score(eps_model: nn.Module, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """grad log p_t(x) = -eps_theta(x, t) / sqrt(v_t) for an epsilon-prediction network."""
    with torch.no_grad():
        v = ou_coefficients(t)[1].to(x.device)
        return -eps_model(x, t) / v.sqrt()[..., None]


def _noised(x0: torch.Tensor, t_min: float, t_max: float, g: torch.Generator):
    """Log-uniform times, noise and x_t = a_t x0 + sqrt(v_t) eps for a batch (on x0's device).

    Random numbers come from the CPU generator `g`, so a run is reproducible on any device.
    """
    u = torch.rand(x0.shape[0], generator=g)
    t = torch.exp(math.log(t_min) + u * (math.log(t_max) - math.log(t_min))).to(x0.device)
    a, v = ou_coefficients(t)
    eps = torch.randn(x0.shape, generator=g).to(x0.device)
    return t, eps, a[:, None] * x0 + v.sqrt()[:, None] * eps


def train_dsm(
    sample_ref: Callable[[int], torch.Tensor],
    steps: int,
    batch: int,
    lr: float,
    t_min: float,
    t_max: float,
    g: torch.Generator,
    hidden: int = 128,
    model: nn.Module | None = None,
) -> nn.Module:
    """Denoising score matching: minimise E ||eps_theta(x_t, t) - eps||^2.

    Trains `model` (any epsilon network with forward(x, t) and .score, e.g. the image UNet) or,
    when None, a fresh ScoreNet of width `hidden` on the dimension of sample_ref's draws.
    """
    model = ScoreNet(sample_ref(1).shape[1], hidden) if model is None else model
    device = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(steps, 1))
    for _ in range(steps):
        t, eps, xt = _noised(sample_ref(batch).to(device), t_min, t_max, g)
        loss = ((model(xt, t) - eps) ** 2).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return model.requires_grad_(False)


def diffusion_dpo_loss(
    model: nn.Module,
    ref: nn.Module,
    x_w: torch.Tensor,
    x_l: torch.Tensor,
    beta_dpo: float,
    t_min: float,
    t_max: float,
    g: torch.Generator,
) -> torch.Tensor:
    """Diffusion-DPO loss as in diffusers' train_diffusion_dpo.py (Wallace et al. 2023, Eq. 14).

    Winners and losers are stacked into one batch that shares t and eps between the two halves;
    e = mean over data dims of (eps_theta - eps)^2; the loss is
    -log s(-beta/2 [(e_w - e_l) - (e_w^ref - e_l^ref)]), averaged over pairs.
    """
    check_pairs(x_w, x_l)
    t, eps, _ = _noised(x_w, t_min, t_max, g)
    t, eps = t.repeat(2), eps.repeat(2, 1)
    a, v = ou_coefficients(t)
    xt = a[:, None] * torch.cat([x_w, x_l]) + v.sqrt()[:, None] * eps
    model_losses = ((model(xt, t) - eps) ** 2).mean(-1)
    with torch.no_grad():
        ref_losses = ((ref(xt, t) - eps) ** 2).mean(-1)
    model_w, model_l = model_losses.chunk(2)
    ref_w, ref_l = ref_losses.chunk(2)
    inside = -0.5 * beta_dpo * ((model_w - model_l) - (ref_w - ref_l))
    return -F_nn.logsigmoid(inside).mean()


def diffusion_dpo(
    ref: nn.Module,
    x_w: torch.Tensor,
    x_l: torch.Tensor,
    steps: int,
    batch: int,
    lr: float,
    beta_dpo: float,
    t_min: float,
    t_max: float,
    g: torch.Generator,
) -> nn.Module:
    """Fine-tune a copy of the reference score network on labelled pairs (Diffusion-DPO)."""
    check_pairs(x_w, x_l)
    model = copy.deepcopy(ref).requires_grad_(True)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        idx = torch.randint(0, x_w.shape[0], (batch,), generator=g)
        loss = diffusion_dpo_loss(model, ref, x_w[idx], x_l[idx], beta_dpo, t_min, t_max, g)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.requires_grad_(False)


def _log_target_and_grad(log_target: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor):
    x = x.detach().requires_grad_(True)
    lp = log_target(x)
    (grad,) = torch.autograd.grad(lp.sum(), x)
    return lp.detach(), grad


def langevin(
    log_target: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    steps: int,
    step_size: float,
    g: torch.Generator,
    metropolis: bool = False,
) -> torch.Tensor:
    """ULA (or MALA with `metropolis`): x' = x + eta grad log pi(x) + sqrt(2 eta) xi."""
    lp, grad = _log_target_and_grad(log_target, x)
    for _ in range(steps):
        prop = x + step_size * grad + (2 * step_size) ** 0.5 * torch.randn(x.shape, generator=g)
        lp_p, grad_p = _log_target_and_grad(log_target, prop)
        if metropolis:
            fwd = -((prop - x - step_size * grad) ** 2).sum(-1) / (4 * step_size)
            bwd = -((x - prop - step_size * grad_p) ** 2).sum(-1) / (4 * step_size)
            accept = torch.log(torch.rand(x.shape[0], generator=g)) < lp_p - lp + bwd - fwd
            keep = accept[:, None]
            x, lp = torch.where(keep, prop, x), torch.where(accept, lp_p, lp)
            grad = torch.where(keep, grad_p, grad)
        else:
            x, lp, grad = prop, lp_p, grad_p
    return x.detach()


def importance_resample(
    pool: torch.Tensor, log_weights: torch.Tensor, n: int, g: torch.Generator, min_ess: float = 10
) -> tuple[torch.Tensor, float]:
    """Draw n samples from the pool with probabilities softmax(log_weights); returns (x, ESS).

    Degenerate weights produce a warning that states the effective sample size, never a NaN.
    """
    if not torch.isfinite(log_weights).any():
        raise ValueError("importance weights are all non-finite; the potential f is not usable")
    log_weights = torch.nan_to_num(log_weights, nan=-torch.inf)
    ess = float(effective_sample_size(log_weights))
    if ess < min_ess:
        warnings.warn(
            f"importance weights degenerate: effective sample size {ess:.1f} of {pool.shape[0]}",
            RuntimeWarning,
            stacklevel=2,
        )
    probs = torch.softmax(log_weights, 0).cpu()  # the CPU generator draws on any device
    idx = torch.multinomial(probs, n, replacement=True, generator=g)
    return pool[idx], ess
