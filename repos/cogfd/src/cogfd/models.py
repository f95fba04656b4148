"""The text-to-image model (text encoder + diffusers UNet) and its sampler.

Small stand-ins for SD v1.5's CLIP text encoder and UNet (the judge lives in `judge.py`).
The UNet is diffusers' `UNet2DConditionModel`, so the cross-attention modules carry the same
names as in SD (`...attn2.to_q/to_k/to_v/to_out`); a real SD pipeline is loaded by `sd.py`.
"""

from __future__ import annotations

import torch
from diffusers import DDIMScheduler, DDPMScheduler, UNet2DConditionModel
from torch import nn
from tqdm.auto import tqdm

from . import data, text

EMBED_DIM = text.EMBED_DIM  # cross_attention_dim of the tiny UNet
TextEncoder = text.TextEncoder


def make_unet(size: int, widths: tuple[int, ...] = (16, 32)) -> UNet2DConditionModel:
    """A small UNet (~0.25M parameters at widths (16, 32)); cross-attention in every block but the
    highest-resolution one, and in the mid block (self-attention at full resolution is what
    makes a CPU step slow)."""
    return UNet2DConditionModel(
        sample_size=size,
        in_channels=3,
        out_channels=3,
        block_out_channels=widths,
        layers_per_block=1,
        down_block_types=("DownBlock2D",) + ("CrossAttnDownBlock2D",) * (len(widths) - 1),
        up_block_types=("CrossAttnUpBlock2D",) * (len(widths) - 1) + ("UpBlock2D",),
        cross_attention_dim=EMBED_DIM,
        attention_head_dim=8,
        norm_num_groups=8,
    )


def make_scheduler(num_train_timesteps: int = 1000) -> DDPMScheduler:
    """SD v1.5's training schedule (scaled-linear betas 0.00085..0.012, T = 1000), so that the
    paper's window t in [990, 1000) means the same noise level here as there."""
    return DDPMScheduler(
        num_train_timesteps=num_train_timesteps,
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
    )


def encode(text_encoder: TextEncoder, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states (B, L, D) and attention mask (B, L) for a list of prompts."""
    return text_encoder(prompts)


def denoise(
    unet: UNet2DConditionModel, x: torch.Tensor, t: torch.Tensor, h: torch.Tensor, m: torch.Tensor
) -> torch.Tensor:
    """eps_theta(x_t, t, c); the text padding mask goes in as diffusers' encoder_attention_mask
    (the official code patches an attention processor for the same effect)."""
    dtype = unet.dtype  # an fp32 UNet erased inside an fp16 pipeline gets fp32 inputs
    return unet(
        x.to(dtype), t.to(x.device), encoder_hidden_states=h.to(dtype), encoder_attention_mask=m
    ).sample


def pretrain(
    size: int,
    steps: int,
    batch: int,
    lr: float,
    seed: int,
    widths: tuple[int, ...] = (16, 32),
    quiet: bool = True,
    device: str = "cpu",
) -> tuple[UNet2DConditionModel, TextEncoder, list[float]]:
    """Train UNet + text encoder from scratch with the DDPM epsilon loss (10% empty prompts)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    unet, sched = make_unet(size, widths), make_scheduler()
    text_encoder = text.tiny_text_encoder()
    unet.to(device)
    text_encoder.to(device)
    params = list(unet.parameters()) + list(text_encoder.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    losses = []
    for _ in tqdm(range(steps), desc="pretrain", disable=quiet, leave=False):
        prompts = data.random_prompts(batch, gen)
        x0, _, _ = data.render_batch(prompts, size, gen)
        noise = torch.randn(x0.shape, generator=gen).to(device)
        t = torch.randint(0, sched.config.num_train_timesteps, (batch,), generator=gen).to(device)
        x0 = x0.to(device)
        h, m = encode(text_encoder, prompts)
        pred = denoise(unet, sched.add_noise(x0, noise, t), t, h, m)
        loss = nn.functional.mse_loss(pred, noise)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    unet.eval().requires_grad_(False)
    text_encoder.eval().requires_grad_(False)
    return unet, text_encoder, losses


@torch.no_grad()
def sample(
    unet: UNet2DConditionModel,
    text_encoder: TextEncoder,
    prompts: list[str],
    size: int,
    steps: int,
    guidance: float,
    gen: torch.Generator,
    init: torch.Tensor | None = None,
    t_init: int = 999,
) -> torch.Tensor:
    """DDIM sampling with classifier-free guidance, starting at t = 999 ("trailing" spacing).

    With `init` (SDEdit), the images are noised to the first DDIM timestep <= t_init and
    denoised from there, so the result is a generated image whose layout is known."""
    ddim = DDIMScheduler.from_config(make_scheduler().config, timestep_spacing="trailing")
    ddim.set_timesteps(steps)
    h, m = encode(text_encoder, prompts)
    h0, m0 = encode(text_encoder, [""] * len(prompts))
    hh, mm = torch.cat([h0, h]), torch.cat([m0, m])
    x = torch.randn(len(prompts), 3, size, size, generator=gen).to(h.device)
    timesteps = ddim.timesteps
    if init is not None:
        timesteps = timesteps[timesteps <= t_init]
        if len(timesteps) == 0:
            raise ValueError(f"t_init={t_init} is below every DDIM timestep")
        x = ddim.add_noise(init.to(x.device), x, timesteps[:1].expand(len(x)))
    for t in timesteps:
        eps_u, eps_c = denoise(unet, torch.cat([x, x]), t.expand(2 * len(x)), hh, mm).chunk(2)
        eps = eps_u + guidance * (eps_c - eps_u)
        x = ddim.step(eps, t, x).prev_sample
    return x.clamp(-1, 1)
