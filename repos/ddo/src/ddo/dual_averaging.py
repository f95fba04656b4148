"""Phase 1: dual averaging (DA) over distributions with Gibbs potentials (paper Sec. 4, Alg. 1).

Iterates are q_k ~ p_ref exp(-f_k). Each loop computes the first variation g_k = dF/dq(q_k) on
fresh reference samples and sets

    f_{k+1} = sum_{j<=k} w_j g_j / D_k,     D_k = beta W_k + beta' c_k,     W_k = sum_{j<=k} w_j,

with w_j = j (the j-th first variation, 1-based) and, by default, c_k = k + 1 ("linear"): the
schedule of particle dual averaging (Nitanda, Wu & Suzuki 2021, the DA this paper builds on),
whose entropic weight lambda (t+1)(t+2) is lambda sum_{s<=t} 2s + 2 lambda (t+1). "constant"
(c_k = 1) is kept as an ablation: there beta' fades like 1/k^2 instead of 1/k (README
Deviations; we could not read the paper's Algorithm 1 to confirm its c_k).
The recursive form f_{k+1} = (D_{k-1} f_k + w_k g_k) / D_k stores only the previous potential:
a network is fitted to this target by regression on the reference samples (the paper's practical
algorithm, reconstructed). Its fixed point f = g(q_f) / beta is the optimality condition of
F(q) + beta KL(q || p_ref).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import nn

from .objectives import discrete_first_variation, first_variation_mc


class Potential(nn.Module):
    """f_theta: R^d -> R, a small MLP (2 x hidden, SiLU so that grad f is smooth for Langevin).

    With `features` (a fixed map x -> phi(x) with attribute `dim`, e.g. a pretrained model's
    pooled activations) the MLP reads phi(x); the map is no submodule, so it is neither trained
    nor copied with the potential.
    """

    def __init__(self, dim: int = 2, hidden: int = 64, features: Callable | None = None):
        super().__init__()
        self.features = features
        in_dim = features.dim if features is not None else dim
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, 1),
        )  # fmt: skip
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)  # f_0 = 0: q_0 = p_ref

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.features is not None:
            x = self.features(x)
        return self.net(x).squeeze(-1)


SCHEDULES = ("linear", "constant")


def da_weights(
    k: int, beta: float, beta_prime: float, schedule: str = "linear"
) -> tuple[float, float, float]:
    """(w_k, D_{k-1}, D_k) of the recursive DA update at loop k (0-based: gradient k + 1)."""
    if beta <= 0 or beta_prime < 0:
        raise ValueError(f"need beta > 0 and beta' >= 0, got beta={beta}, beta'={beta_prime}")
    if schedule not in SCHEDULES:
        raise ValueError(f"DA schedule must be one of {SCHEDULES}, got {schedule!r}")

    def denominator(n: int) -> float:  # D after n first variations
        c = (n + 1) if schedule == "linear" else 1.0
        return beta * n * (n + 1) / 2 + beta_prime * c

    return float(k + 1), denominator(k), denominator(k + 1)


def fit_potential(
    model: Potential, x: torch.Tensor, target: torch.Tensor, steps: int, lr: float
) -> float:
    """Regress model(x) on target with Adam (full batch); returns the final mean squared error."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    scale = target.std().clamp_min(1e-6)  # regress in units of the target's spread
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - target) ** 2).mean() / scale**2
        loss.backward()
        opt.step()
    with torch.no_grad():
        return float(((model(x) - target) ** 2).mean())


def dual_averaging(
    kind: str,
    sample_ref: Callable[[int], torch.Tensor],
    reward_fn: Callable[[torch.Tensor], torch.Tensor],
    loops: int,
    n_samples: int,
    beta: float,
    beta_prime: float,
    beta_d: float,
    fit_steps: int,
    lr: float,
    hidden: int = 64,
    schedule: str = "linear",
    on_loop: Callable[[int, Potential], None] | None = None,
    device: str | torch.device = "cpu",
    features: Callable | None = None,
) -> list[Potential]:
    """Run `loops` DA loops; returns the potentials f_0 = 0, f_1, ..., f_K (Alg. 1, reconstructed).

    sample_ref(n) draws reference samples (the pretrained model in the paper), shape (n, d),
    on `device`, where the potential networks live too; `features` as in Potential.
    """
    if beta <= 0:
        raise ValueError(f"beta (the KL weight) must be > 0, got {beta}")
    da_weights(0, beta, beta_prime, schedule)  # rejects a bad schedule before any sampling
    dim = sample_ref(1).shape[1]
    potentials = [Potential(dim, hidden, features).to(device)]
    for k in range(loops):
        prev = potentials[-1]
        x = sample_ref(n_samples)
        x_inner = sample_ref(n_samples)  # independent x' for the inner expectation of g
        with torch.no_grad():
            f_x, f_inner = prev(x), prev(x_inner)
            g = first_variation_mc(kind, f_x, reward_fn(x), f_inner, reward_fn(x_inner), beta_d)
            w, d_prev, d_new = da_weights(k, beta, beta_prime, schedule)
            target = (d_prev * f_x + w * g) / d_new
            target = target - target.mean()  # f is defined up to a constant
        model = copy.deepcopy(prev).requires_grad_(True)
        fit_potential(model, x, target, fit_steps, lr)
        potentials.append(model.requires_grad_(False))
        if on_loop is not None:
            on_loop(k, model)
    return potentials


def grid_dual_averaging(
    kind: str,
    p: torch.Tensor,
    r: torch.Tensor,
    loops: int,
    beta: float,
    beta_prime: float,
    beta_d: float,
    schedule: str = "linear",
) -> list[torch.Tensor]:
    """DA with exact first variations on atoms (no sampling, no network): q_0 = p, ..., q_K.

    The same recursion as `dual_averaging`, so it isolates the schedule's effect from Monte
    Carlo and fit error; its fixed point is the grid optimum q_hat.
    """
    f = torch.zeros_like(p)
    qs = [p.clone()]
    for k in range(loops):
        g = discrete_first_variation(kind, qs[-1], p, r, beta_d)
        w, d_prev, d_new = da_weights(k, beta, beta_prime, schedule)
        f = (d_prev * f + w * g) / d_new
        qs.append(torch.softmax(torch.log(p) - f, 0))
    return qs
