"""Baselines, all one SIREN of matched size per signal, fitted with the same SGD as the method.

- OL: offline learning, all sub-tasks' data at once (not continual: an upper reference).
- Naive: sequential fine-tuning over sub-tasks, no replay (forgets).
- EWC: sequential with the diagonal-Fisher penalty of Kirkpatrick et al. (2017).
- ER: sequential with a small replay buffer of earlier sub-tasks' points.
- MOL: a MAML-learned initialisation of the single MLP (meta-offline), then sequential fitting.
Parameters are batched over signals (one independent copy per signal), as in `modular`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .modular import Params, Siren, adapt, broadcast, fields, layer_grads, point_losses

SEQUENTIAL = ("naive", "ewc", "replay")


def diagonal_fisher(
    module: Siren, params: Params, coords: torch.Tensor, targets: torch.Tensor
) -> Params:
    """EWC's per-parameter (diagonal) empirical Fisher, per signal: the mean over points of the
    squared per-point gradient of l_j = mean_c (f_c - y_c)^2, i.e. of sum_c 2 (f_c - y_c) / C f_c.

    A point's weight gradient is delta_j a_j^T (`modular.layer_grads`), so its square is
    delta_j^2 (a_j^2)^T and the mean over points is one matrix product per layer. A sample of
    G > 1 rows (a NeRF ray) has the gradient sum_s delta_s a_s^T, formed per sample in chunks."""
    resid = fields(module, {k: v.detach() for k, v in params.items()}, coords) - targets
    m, g = coords.shape[1], module.group
    fisher: Params = {}
    for i, (a, d) in enumerate(layer_grads(module, params, coords, 2 * resid / targets.shape[-1])):
        if g == 1:
            fisher[f"layers.{i}.weight"] = d.pow(2).transpose(1, 2) @ a.pow(2) / m
            fisher[f"layers.{i}.bias"] = d.pow(2).mean(1)
            continue
        a, d = a.unflatten(1, (m, g)), d.unflatten(1, (m, g))
        fisher[f"layers.{i}.weight"] = (
            sum(
                (d[:, c : c + 64].transpose(-1, -2) @ a[:, c : c + 64]).pow(2).sum(1)
                for c in range(0, m, 64)
            )
            / m
        )
        fisher[f"layers.{i}.bias"] = d.sum(2).pow(2).mean(1)
    return fisher


def fit_single(
    module: Siren,
    theta0: Params,
    coords: torch.Tensor,
    targets: torch.Tensor,
    steps: int,
    lr: float,
    method: str,
    ewc_lambda: float = 100.0,
    replay_points: int = 64,
    seed: int = 0,
    batch: tuple[int, int] | None = None,
) -> tuple[Params, torch.Tensor]:
    """Fit one MLP per signal to sub-tasks 1..t in order, `steps` SGD steps each (`batch` as in
    `modular.adapt`, its seed advanced per sub-task; replay then also draws a batch per step).

    coords (t, m, 2), targets (n, t, m, 3). Returns the final parameters (n, ...) and the
    per-signal MSE on sub-task 1 right after it was learned (for the forgetting measure).
    """
    if method not in SEQUENTIAL:
        raise ValueError(f"method must be one of {SEQUENTIAL}, got {method!r}")
    n, t = targets.shape[:2]
    gen = torch.Generator().manual_seed(seed)
    params = broadcast(theta0, n)
    anchors: list[tuple[Params, Params]] = []
    replay_x, replay_y = [], []
    first_mse = torch.zeros(n)
    for k in range(t):
        x, y = coords[k].expand(n, -1, -1), targets[:, k]

        def penalty(p: Params) -> torch.Tensor:
            total = torch.zeros(())
            if method == "ewc":
                for star, fisher in anchors:
                    total = total + ewc_lambda / 2 * sum(
                        (fisher[name] * (p[name] - star[name]) ** 2).sum() for name in p
                    )
            if method == "replay" and replay_x:
                bx, by = torch.cat(replay_x, 1), torch.cat(replay_y, 1)
                if batch is not None and batch[0] < bx.shape[1]:  # a replay batch per step
                    keep = torch.randperm(bx.shape[1], generator=gen)[: batch[0]].to(bx.device)
                    bx, by = bx[:, keep], by[:, keep]
                total = total + point_losses(module, p, bx, by).mean(-1).sum()
            return total

        draw = (batch[0], batch[1] + k) if batch is not None else None
        params = adapt(module, params, x, y, steps, lr, extra_loss=penalty, batch=draw)
        if k == 0:
            first_mse = point_losses(module, params, x, y).mean(-1).detach()
        if method == "ewc":
            star = {name: v.detach() for name, v in params.items()}
            anchors.append((star, diagonal_fisher(module, star, x, y)))
        if method == "replay" and replay_points:
            keep = torch.randperm(x.shape[1], generator=gen)[:replay_points]
            replay_x.append(x[:, keep])
            replay_y.append(y[:, keep])
    return {k: v.detach() for k, v in params.items()}, first_mse


def fit_offline(
    module: Siren,
    theta0: Params,
    coords: torch.Tensor,
    targets: torch.Tensor,
    steps: int,
    lr: float,
    on_step: Callable[[int, Params], None] | None = None,
    batch: tuple[int, int] | None = None,
) -> Params:
    """OL: all t sub-tasks at once, for t * steps SGD steps (the same number of updates);
    `on_step(s, params)` sees every intermediate step; `batch` as in `modular.adapt`."""
    n, t = targets.shape[:2]
    x = coords.reshape(1, -1, coords.shape[-1]).expand(n, -1, -1)
    y = targets.reshape(n, -1, targets.shape[-1])
    params = adapt(module, broadcast(theta0, n), x, y, t * steps, lr, on_step=on_step, batch=batch)
    return {k: v.detach() for k, v in params.items()}
