"""Comparison erasers, each returning an edited copy of the UNet like `erase_cogfd`.

- ESD-x (Gandikota et al. 2023): cross-attention fine-tuned towards negative guidance,
  eps_theta(x_t, c) -> eps0(x_t, "") - eta (eps0(x_t, c) - eps0(x_t, "")), on-policy as in its
  code: x_t comes from a partial DDIM run of the model being edited, stopped at a random step.
- Concept Ablation (Kumari et al. 2023), model-based, anchored: eps_theta(x_t, c) -> eps0(x_t, a)
  on images of the anchor a, training cross-attention to_k/to_v.
- UCE (Gandikota et al. 2024): closed-form edit of every cross-attention to_k/to_v, on the
  token rows from the concept's last token on; the preserved prompts ("" and the
  sub-concepts) enter with all their token rows at weight preserve_scale (official: 0.1).
- Naive: ESD-x applied to each sub-concept separately, one after the other.
"""

from __future__ import annotations

import torch
from diffusers import DDIMScheduler, UNet2DConditionModel

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
    ddim_steps: int = 10,
    guidance: float = 3.0,
) -> tuple[UNet2DConditionModel, list[float]]:
    """ESD-x on one concept, on-policy as the official code (esd_diffusers.py): each step draws a
    DDIM step index k, runs the model being edited (classifier-free guidance) from pure noise
    through the first k DDIM steps, and regresses eps_theta(x_t, t_k, c) on the original's
    negatively guided prediction at that x_t and the timestep t_k it has reached. `images` only
    sets the batch size and image shape (the official batch is 1)."""
    n, shape = images.shape[0], tuple(images.shape[1:])
    with torch.no_grad():
        h, m = models.encode(text_encoder, [concept] * n)
        h0, m0 = models.encode(text_encoder, [""] * n)
    student, params = trainable_copy(unet, lambda name: "attn2" in name)

    def step_loss(_: int) -> torch.Tensor:
        k = int(torch.randint(0, ddim_steps, (1,), generator=gen))
        x_t, t_k = sample_until(
            student, text_encoder, concept, n, shape, ddim_steps, guidance, k, gen
        )
        t = t_k.expand(n).to(x_t.device)
        with torch.no_grad():
            e_c = models.denoise(unet, x_t, t, h, m)
            e_0 = models.denoise(unet, x_t, t, h0, m0)
            target = e_0 - eta * (e_c - e_0)
        return torch.nn.functional.mse_loss(models.denoise(student, x_t, t, h, m), target)

    return student, finetune(student, params, step_loss, steps, lr, quiet, desc="ESD-x")


@torch.no_grad()
def sample_until(
    unet: UNet2DConditionModel,
    text_encoder: models.TextEncoder,
    prompt: str,
    n: int,
    shape: tuple[int, ...],
    ddim_steps: int,
    guidance: float,
    k: int,
    gen: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """x after the first k of `ddim_steps` DDIM steps from pure noise (k = 0: the noise itself)
    and the timestep it has reached (the official run_till_timestep); the model samples in eval
    mode and is put back in its mode after."""
    ddim = DDIMScheduler.from_config(models.make_scheduler().config, timestep_spacing="trailing")
    ddim.set_timesteps(ddim_steps)
    h, m = models.encode(text_encoder, [prompt] * n)
    h0, m0 = models.encode(text_encoder, [""] * n)
    hh, mm = torch.cat([h0, h]), torch.cat([m0, m])
    x = torch.randn((n, *shape), generator=gen).to(h.device)
    was_training = unet.training
    unet.eval()
    for t in ddim.timesteps[:k]:
        eps_u, eps_c = models.denoise(unet, torch.cat([x, x]), t.expand(2 * n), hh, mm).chunk(2)
        x = ddim.step(eps_u + guidance * (eps_c - eps_u), t, x).prev_sample
    unet.train(was_training)
    return x, ddim.timesteps[k]


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
    ddim_steps: int = 10,
    guidance: float = 3.0,
) -> tuple[UNet2DConditionModel, list[float]]:
    """Erase each sub-concept on its own with ESD-x, splitting the step budget between them."""
    losses: list[float] = []
    share = max(1, steps // len(concepts))
    for concept, images in zip(concepts, images_per_concept, strict=True):
        unet, part = esd_x(
            unet,
            text_encoder,
            images,
            concept,
            steps=share,
            lr=lr,
            eta=eta,
            gen=gen,
            quiet=quiet,
            ddim_steps=ddim_steps,
            guidance=guidance,
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
    w: torch.Tensor,
    c_erase: torch.Tensor,
    v_target: torch.Tensor,
    c_keep: torch.Tensor,
    lam: float,
    preserve_scale: float = 1.0,
) -> torch.Tensor:
    """UCE's closed form: argmin_W' sum||W'c_e - v*_e||^2 + s sum||W'c_p - W c_p||^2
    + lam||W'-W||^2, W' = (V* C_e^T + s W C_p C_p^T + lam W)(C_e C_e^T + s C_p C_p^T + lam I)^-1
    (rows of c_* are token embeddings, s = preserve_scale)."""
    d = w.shape[1]
    eye = torch.eye(d, dtype=w.dtype, device=w.device)
    keep = preserve_scale * (c_keep.T @ c_keep)
    lhs = c_erase.T @ c_erase + keep + lam * eye
    rhs = v_target.T @ c_erase + w @ keep + lam * w
    return torch.linalg.solve(lhs, rhs.T).T  # lhs is symmetric


def uce(
    unet: UNet2DConditionModel,
    text_encoder: models.TextEncoder,
    concept: str,
    anchor: str,
    preserve: list[str],
    lam: float,
    preserve_scale: float = 0.1,
) -> UNet2DConditionModel:
    """Edit every attn2.to_k / to_v so the concept's tokens map where the anchor's tokens map,
    preserving "" and `preserve` with every token row (padding included) at preserve_scale,
    as the official edit_model (retain_texts = [""] + preserve_concepts)."""
    with torch.no_grad():
        h, m = models.encode(text_encoder, [concept, anchor])
        if int(m[0].sum()) != int(m[1].sum()):
            raise ValueError(f"UCE needs {concept!r} and anchor {anchor!r} of equal token length")
        keep_h, _ = models.encode(text_encoder, [""] + list(preserve))
        c_e, c_a = _from_last_token(h[:1], m[:1]), _from_last_token(h[1:], m[1:])
        c_p = keep_h.reshape(-1, keep_h.shape[-1]).double()
    edited = _copy(unet)
    for name, module in edited.named_modules():
        if name.endswith("attn2"):
            for proj in (module.to_k, module.to_v):
                w = proj.weight.data.double()
                proj.weight.data = uce_solve(w, c_e, c_a @ w.T, c_p, lam, preserve_scale).float()
    return edited


def _from_last_token(h: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """Rows of h from each prompt's last word token to the end (the official UCE slice,
    `attention_mask.sum() - 2`: the concept's final token, <|endoftext|> and the padding)."""
    last = m.sum(-1) - 2
    return torch.cat([h[i, int(j) :] for i, j in enumerate(last)]).double()


def _copy(unet: UNet2DConditionModel) -> UNet2DConditionModel:
    student, _ = trainable_copy(unet, lambda n: True)
    return student.eval().requires_grad_(False)
