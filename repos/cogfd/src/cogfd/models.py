"""The text-to-image model (text encoder + diffusers UNet), its sampler, and the oracle.

Small stand-ins for SD v1.5's CLIP text encoder, UNet and for the paper's CLIP-score judge.
The UNet is diffusers' `UNet2DConditionModel`, so the cross-attention modules carry the same
names as in SD (`...attn2.to_q/to_k/to_v/to_out`), and `load_unet` also reads a local SD
checkpoint folder for the full preset.
"""

from __future__ import annotations

import torch
from diffusers import DDIMScheduler, DDPMScheduler, UNet2DConditionModel
from torch import nn
from tqdm.auto import tqdm

from . import data

EMBED_DIM = 32  # cross_attention_dim of the tiny UNet


class TextEncoder(nn.Module):
    """Token embeddings + positions + one transformer layer -> (B, 4, EMBED_DIM) hidden states."""

    def __init__(self, dim: int = EMBED_DIM) -> None:
        super().__init__()
        self.tok = nn.Embedding(len(data.VOCAB), dim)
        self.pos = nn.Parameter(torch.zeros(data.MAX_TOKENS, dim))
        self.layer = nn.TransformerEncoderLayer(
            dim, nhead=4, dim_feedforward=2 * dim, dropout=0.0, batch_first=True
        )

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.tok(ids) + self.pos
        return self.layer(h, src_key_padding_mask=mask == 0)


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


def load_unet(path: str) -> UNet2DConditionModel:
    """A local diffusers UNet folder (e.g. SD v1.5's `unet/`); no hub access."""
    return UNet2DConditionModel.from_pretrained(path, local_files_only=True)


def make_scheduler(num_train_timesteps: int = 1000) -> DDPMScheduler:
    """SD v1.5's training schedule (scaled-linear betas 0.00085..0.012, T = 1000), so that the
    paper's window t in [990, 1000) means the same noise level here as there."""
    return DDPMScheduler(
        num_train_timesteps=num_train_timesteps,
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
    )


class Oracle(nn.Module):
    """Small CNN with a colour head and a shape head: our judge in place of CLIP."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.colour = nn.Linear(64, len(data.COLOUR_CLASSES))
        self.shape = nn.Linear(64, len(data.SHAPE_CLASSES))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f = self.body(x)
        return self.colour(f), self.shape(f)


def train_oracle(size: int, steps: int, batch: int, seed: int) -> Oracle:
    """Fit the oracle on freshly rendered images (every word, all attributes drawn)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1000)
    oracle = Oracle()
    opt = torch.optim.Adam(oracle.parameters(), lr=3e-3)
    ce = nn.functional.cross_entropy
    for _ in range(steps):
        prompts = data.random_prompts(batch, gen, p_empty=0.2)
        x, c, s = data.render_batch(prompts, size, gen)
        lc, ls = oracle(x)
        loss = ce(lc, c) + ce(ls, s)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return oracle.eval().requires_grad_(False)


def encode(text_encoder: TextEncoder, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states (B, 4, D) and padding mask (B, 4) for a list of prompts."""
    ids, mask = data.tokenize(prompts)
    device = text_encoder.pos.device
    return text_encoder(ids.to(device), mask.to(device)), mask.to(device)


def denoise(
    unet: UNet2DConditionModel, x: torch.Tensor, t: torch.Tensor, h: torch.Tensor, m: torch.Tensor
) -> torch.Tensor:
    """eps_theta(x_t, t, c); the text padding mask goes in as diffusers' encoder_attention_mask
    (the official code patches an attention processor for the same effect)."""
    return unet(x, t.to(x.device), encoder_hidden_states=h, encoder_attention_mask=m).sample


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
    unet, text_encoder, sched = make_unet(size, widths), TextEncoder(), make_scheduler()
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
) -> torch.Tensor:
    """DDIM sampling with classifier-free guidance, starting at t = 999 ("trailing" spacing)."""
    ddim = DDIMScheduler.from_config(make_scheduler().config, timestep_spacing="trailing")
    ddim.set_timesteps(steps)
    h, m = encode(text_encoder, prompts)
    h0, m0 = encode(text_encoder, [""] * len(prompts))
    hh, mm = torch.cat([h0, h]), torch.cat([m0, m])
    x = torch.randn(len(prompts), 3, size, size, generator=gen).to(h.device)
    for t in ddim.timesteps:
        eps_u, eps_c = denoise(unet, torch.cat([x, x]), t.expand(2 * len(x)), hh, mm).chunk(2)
        eps = eps_u + guidance * (eps_c - eps_u)
        x = ddim.step(eps, t, x).prev_sample
    return x.clamp(-1, 1)
