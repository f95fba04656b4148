"""Comparison erasers, each returning an edited copy of the UNet like `erase_cogfd`.

- ESD-x (Gandikota et al. 2023): cross-attention fine-tuned towards negative guidance,
  eps_theta(x_t, c) -> eps0(x_t, "") - eta (eps0(x_t, c) - eps0(x_t, "")), t over the whole range.
- Concept Ablation (Kumari et al. 2023), model-based, anchored: eps_theta(x_t, c) -> eps0(x_t, a)
  on images of the anchor a, training cross-attention to_k/to_v.
- UCE (Gandikota et al. 2024): closed-form edit of every cross-attention to_k/to_v, on the
  token rows from the concept's last token on (as the official code).
- Naive: ESD-x applied to each sub-concept separately, one after the other.
"""

from __future__ import annotations

import torch
from diffusers import UNet2DConditionModel

from . import models
from .decoupling import finetune, trainable_copy


def esd_x(
    unet: UNet2DConditionModel,
    text_encoder: models.TextEncoder,
    images: torch.Tensor,
    concept: str,
    *,
    steps: int,
    lr: float,
    eta: float,
    gen: torch.Generator,
    quiet: bool = True,
) -> tuple[UNet2DConditionModel, list[float]]:
    """ESD-x on one concept; x_t are `images` of the concept noised to t ~ U{0..T-1} (the
    original samples x_t from the model being edited; see Deviations)."""
    with torch.no_grad():
        h, m = models.encode(text_encoder, [concept] * images.shape[0])
        h0, m0 = models.encode(text_encoder, [""] * images.shape[0])
    student, params = trainable_copy(unet, lambda n: "attn2" in n)
    sched = models.make_scheduler()
    n_t = sched.config.num_train_timesteps

    def step_loss(_: int) -> torch.Tensor:
        t = torch.randint(0, n_t, (images.shape[0],), generator=gen).to(images.device)
        noise = torch.randn(images.shape, generator=gen).to(images.device)
        x_t = sched.add_noise(images, noise, t)
        with torch.no_grad():
            e_c = models.denoise(unet, x_t, t, h, m)
            e_0 = models.denoise(unet, x_t, t, h0, m0)
            target = e_0 - eta * (e_c - e_0)
        return torch.nn.functional.mse_loss(models.denoise(student, x_t, t, h, m), target)

    return student, finetune(student, params, step_loss, steps, lr, quiet, desc="ESD-x")


def naive(
    unet: UNet2DConditionModel,
    text_encoder: models.TextEncoder,
    images_per_concept: list[torch.Tensor],
    concepts: list[str],
    *,
    steps: int,
    lr: float,
    eta: float,
    gen: torch.Generator,
    quiet: bool = True,
) -> tuple[UNet2DConditionModel, list[float]]:
    """Erase each sub-concept on its own with ESD-x, splitting the step budget between them."""
    losses: list[float] = []
    share = max(1, steps // len(concepts))
    for concept, images in zip(concepts, images_per_concept, strict=True):
        unet, part = esd_x(
            unet, text_encoder, images, concept, steps=share, lr=lr, eta=eta, gen=gen, quiet=quiet
        )
        losses += part
    return unet, losses


def concept_ablation(
    unet: UNet2DConditionModel,
    text_encoder: models.TextEncoder,
    anchor_images: torch.Tensor,
    concept: str,
    anchor: str,
    *,
    steps: int,
    lr: float,
    gen: torch.Generator,
    quiet: bool = True,
) -> tuple[UNet2DConditionModel, list[float]]:
    """Model-based Concept Ablation: match the original's prediction for the anchor prompt."""
    n = anchor_images.shape[0]
    with torch.no_grad():
        h, m = models.encode(text_encoder, [concept] * n)
        ha, ma = models.encode(text_encoder, [anchor] * n)
    select = lambda name: "attn2" in name and ("to_k" in name or "to_v" in name)
    student, params = trainable_copy(unet, select)
    sched = models.make_scheduler()

    def step_loss(_: int) -> torch.Tensor:
        t = torch.randint(0, sched.config.num_train_timesteps, (n,), generator=gen)
        noise = torch.randn(anchor_images.shape, generator=gen).to(anchor_images.device)
        x_t = sched.add_noise(anchor_images, noise, t.to(noise.device))
        with torch.no_grad():
            target = models.denoise(unet, x_t, t, ha, ma)
        return torch.nn.functional.mse_loss(models.denoise(student, x_t, t, h, m), target)

    return student, finetune(student, params, step_loss, steps, lr, quiet, desc="CA")


def uce_solve(
    w: torch.Tensor, c_erase: torch.Tensor, v_target: torch.Tensor, c_keep: torch.Tensor, lam: float
) -> torch.Tensor:
    """UCE's closed form: argmin_W' sum||W'c_e - v*_e||^2 + sum||W'c_p - W c_p||^2 + lam||W'-W||^2,
    W' = (V* C_e^T + W C_p C_p^T + lam W)(C_e C_e^T + C_p C_p^T + lam I)^-1 (rows of c_* are
    token embeddings)."""
    d = w.shape[1]
    eye = torch.eye(d, dtype=w.dtype, device=w.device)
    lhs = c_erase.T @ c_erase + c_keep.T @ c_keep + lam * eye
    rhs = v_target.T @ c_erase + w @ c_keep.T @ c_keep + lam * w
    return torch.linalg.solve(lhs, rhs.T).T  # lhs is symmetric


def uce(
    unet: UNet2DConditionModel,
    text_encoder: models.TextEncoder,
    concept: str,
    anchor: str,
    preserve: list[str],
    lam: float,
) -> UNet2DConditionModel:
    """Edit every attn2.to_k / to_v so the concept's tokens map where the anchor's tokens map."""
    with torch.no_grad():
        h, m = models.encode(text_encoder, [concept, anchor])
        if int(m[0].sum()) != int(m[1].sum()):
            raise ValueError(f"UCE needs {concept!r} and anchor {anchor!r} of equal token length")
        keep_h, keep_m = models.encode(text_encoder, preserve)
        c_e, c_a = _from_last_token(h[:1], m[:1]), _from_last_token(h[1:], m[1:])
        c_p = _from_last_token(keep_h, keep_m)
    edited = _copy(unet)
    for name, module in edited.named_modules():
        if name.endswith("attn2"):
            for proj in (module.to_k, module.to_v):
                w = proj.weight.data.double()
                proj.weight.data = uce_solve(w, c_e, c_a @ w.T, c_p, lam).float()
    return edited


def _from_last_token(h: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """Rows of h from each prompt's last word token to the end (the official UCE slice,
    `attention_mask.sum() - 2`: the concept's final token, <|endoftext|> and the padding)."""
    last = m.sum(-1) - 2
    return torch.cat([h[i, int(j) :] for i, j in enumerate(last)]).double()


def _copy(unet: UNet2DConditionModel) -> UNet2DConditionModel:
    student, _ = trainable_copy(unet, lambda n: True)
    return student.eval().requires_grad_(False)
