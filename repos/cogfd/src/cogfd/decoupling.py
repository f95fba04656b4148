"""Stage B: high-level feature decoupling (the official `concept_combination_erasing.py`).

A trainable copy eps_theta and the frozen original eps_theta0 see the same x_t (an image of the
combination noised to t in the early, high-noise window [t_start, t_end)) and the same prompt.
  L_e = mean ||eps_theta - eps_theta0||^2 over erase prompts (label -1)
  L_r = mean ||eps_theta - eps_theta0||^2 over retain prompts (label +1)
  L   = 0.1 exp(-L_e) + exp(L_r)
Only cross-attention `attn2.to_q`, `attn2.to_k` and `attn2.to_out` are trained (not `to_v`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
from diffusers import UNet2DConditionModel
from tqdm.auto import tqdm

from . import models


def cogfd_params(name: str) -> bool:
    """The official selection: 'attn2' in the name and 'to_v' not in it."""
    return "attn2" in name and "to_v" not in name


def masked_mse(a: torch.Tensor, b: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Mean squared difference over the selected rows; 0 (not NaN) when no row is selected."""
    if not bool(rows.any()):
        return a.sum() * 0.0
    return ((a[rows] - b[rows]) ** 2).mean()


def cogfd_loss(
    eps: torch.Tensor, eps0: torch.Tensor, is_erase: torch.Tensor, erase_weight: float = 0.1
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradient-adversarial loss L = w exp(-L_e) + exp(L_r); returns (L, L_e, L_r).

    exp(-L_e) saturates, so the push away from the original is bounded, while exp(L_r) grows
    fast with any drift on retained concepts. A batch without erase (retain) prompts gets
    L_e = 0 (L_r = 0), a constant term with zero gradient, instead of the official NaN.
    """
    l_e = masked_mse(eps, eps0, is_erase)
    l_r = masked_mse(eps, eps0, ~is_erase)
    return erase_weight * torch.exp(-l_e) + torch.exp(l_r), l_e, l_r


def window_timesteps(n: int, start: int, end: int, gen: torch.Generator) -> torch.Tensor:
    """t ~ U{start, ..., end - 1} (paper: U{990..999} of T = 1000)."""
    if not 0 <= start < end:
        raise ValueError(f"timestep window [{start}, {end}) is empty or negative")
    return torch.randint(start, end, (n,), generator=gen)


def trainable_copy(
    unet: UNet2DConditionModel, select: Callable[[str], bool]
) -> tuple[UNet2DConditionModel, list[torch.nn.Parameter]]:
    """A deep copy of `unet` in which only the parameters whose name passes `select` train."""
    student = copy.deepcopy(unet).train()
    student.requires_grad_(False)
    params = [p for n, p in student.named_parameters() if select(n)]
    if not params:
        raise ValueError("the parameter selection matches no UNet parameter")
    for p in params:
        p.requires_grad_(True)
    return student, params


def finetune(
    student: UNet2DConditionModel,
    params: list[torch.nn.Parameter],
    step_loss: Callable[[int], torch.Tensor],
    steps: int,
    lr: float,
    quiet: bool = True,
    desc: str = "erase",
    weight_decay: float = 0.01,
) -> list[float]:
    """The optimiser loop every fine-tuning eraser shares: AdamW (0.9, 0.999), weight decay
    0.01, gradient clipping at 1.0, constant learning rate (the official settings)."""
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.999), weight_decay=weight_decay)
    losses = []
    bar = tqdm(range(steps), desc=desc, disable=quiet, leave=False)
    for step in bar:
        loss = step_loss(step)
        value = float(loss.detach())
        if not math.isfinite(value):
            raise FloatingPointError(f"{desc}: loss became {value} at step {step}")
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(value)
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
    student.eval().requires_grad_(False)
    return losses


def erase_cogfd(
    unet: UNet2DConditionModel,
    text_encoder: models.TextEncoder,
    images: torch.Tensor,
    erase: list[str],
    retain: list[str],
    *,
    steps: int,
    lr: float,
    batch: int,
    t_window: tuple[int, int],
    erase_weight: float,
    gen: torch.Generator,
    quiet: bool = True,
) -> tuple[UNet2DConditionModel, list[float], list[float]]:
    """CoGFD fine-tuning; returns the edited copy of `unet`, the loss curve and the L_e curve
    (how far the erase prompts have been pushed; it starts at exactly 0).

    As in the official dataset, prompt i is paired with image i mod len(images), and a batch is
    min(|E| + |R|, batch) prompts drawn without replacement each step.
    """
    if not erase:
        raise ValueError("the erase set is empty: CoGFD needs at least one prompt to erase")
    if images.shape[0] < 1:
        raise ValueError("CoGFD needs at least one training image of the combination")
    prompts = list(erase) + list(retain)
    labels = torch.tensor([True] * len(erase) + [False] * len(retain), device=images.device)
    with torch.no_grad():
        h_all, m_all = models.encode(text_encoder, prompts)
    pair = images[torch.arange(len(prompts)) % images.shape[0]]
    bsz = min(len(prompts), batch)
    frozen = unet
    student, params = trainable_copy(unet, cogfd_params)
    sched = models.make_scheduler()

    def step_loss(_: int) -> torch.Tensor:
        idx = torch.randperm(len(prompts), generator=gen)[:bsz].to(images.device)
        x0 = pair[idx]
        t = window_timesteps(bsz, *t_window, gen).to(x0.device)
        noise = torch.randn(x0.shape, generator=gen).to(x0.device)
        x_t = sched.add_noise(x0, noise, t)
        eps = models.denoise(student, x_t, t, h_all[idx], m_all[idx])
        with torch.no_grad():
            eps0 = models.denoise(frozen, x_t, t, h_all[idx], m_all[idx])
        loss, l_e, _ = cogfd_loss(eps, eps0, labels[idx], erase_weight)
        erase_curve.append(float(l_e.detach()))
        return loss

    erase_curve: list[float] = []
    losses = finetune(student, params, step_loss, steps, lr, quiet, desc="CoGFD")
    return student, losses, erase_curve
