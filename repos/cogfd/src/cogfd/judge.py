"""The judge that plays CLIP's part, and its validation on *generated* images.

A small CNN with a colour head and a shape head, each with an extra "none" class (abstain).
The first pass trained it on clean renders only, and on generated samples it failed: generated
red squares read as circles and pure noise read as "red circle" at 0.88 confidence. Generated
8x8 samples carry strong residual pixel noise and soft edges, so the judge now trains on renders
with noise of random strength and a random blur, and on "nothing" images (pure noise, empty
noisy backgrounds) labelled none. `validate_judge` measures it where it is used: on held-out
generated images with known content (SDEdit: a render noised to t0 and denoised by the original
model with its true prompt), on pure noise (the negative control), and on fresh renders.
"""

from __future__ import annotations

import torch
from torch import nn

from . import data

NONE = "none"
COLOURS = data.COLOUR_CLASSES + (NONE,)
SHAPES = data.SHAPE_CLASSES + (NONE,)
NOISE_MAX = 0.3
"""Largest std of the Gaussian pixel noise added to training renders (images live in [-1, 1])."""
P_NOTHING = 0.2
"""Share of each training batch that shows no shape (label none for colour and shape)."""


class Oracle(nn.Module):
    """Small CNN with a colour head and a shape head (last class of each: none)."""

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
        self.colour = nn.Linear(64, len(COLOURS))
        self.shape = nn.Linear(64, len(SHAPES))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f = self.body(x)
        return self.colour(f), self.shape(f)


def pure_noise(n: int, size: int, gen: torch.Generator) -> torch.Tensor:
    """N(0, 1) pixels clamped to [-1, 1]: what a sampler that learned nothing returns."""
    return torch.randn(n, 3, size, size, generator=gen).clamp(-1, 1)


def _nothing(n: int, size: int, gen: torch.Generator) -> torch.Tensor:
    """Half pure noise at a random scale, half empty grey backgrounds with pixel noise."""
    scale = 0.3 + 0.7 * torch.rand(n, 1, 1, 1, generator=gen)
    noise = (torch.randn(n, 3, size, size, generator=gen) * scale).clamp(-1, 1)
    grey = -0.7 + 0.2 * torch.rand(n, 1, 1, 1, generator=gen)
    empty = grey + NOISE_MAX * torch.rand(n, 1, 1, 1, generator=gen) * torch.randn(
        n, 3, size, size, generator=gen
    )
    pick = torch.rand(n, 1, 1, 1, generator=gen) < 0.5
    return torch.where(pick, noise, empty.clamp(-1, 1))


def _degrade(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random 3x3 blur (half the images) and Gaussian pixel noise of random strength."""
    n = x.shape[0]
    blur = nn.functional.avg_pool2d(nn.functional.pad(x, (1, 1, 1, 1), mode="replicate"), 3, 1)
    mix = 0.6 * (torch.rand(n, 1, 1, 1, generator=gen) < 0.5).float()
    x = (1 - mix) * x + mix * blur
    sigma = NOISE_MAX * torch.rand(n, 1, 1, 1, generator=gen)
    return (x + sigma * torch.randn(x.shape, generator=gen)).clamp(-1, 1)


def training_batch(
    n: int, size: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Degraded renders of random prompts plus P_NOTHING "nothing" images labelled none."""
    n_nothing = round(P_NOTHING * n)
    prompts = data.random_prompts(n - n_nothing, gen, p_empty=0.2)
    x, c, s = data.render_batch(prompts, size, gen)
    x = torch.cat([_degrade(x, gen), _nothing(n_nothing, size, gen)])
    none = torch.full((n_nothing,), len(COLOURS) - 1)
    return x, torch.cat([c, none]), torch.cat([s, none])


def train_oracle(
    size: int, steps: int, batch: int, seed: int, generated: tuple | None = None
) -> Oracle:
    """Fit the judge on degraded renders and nothing-images (see the module docstring); with
    `generated` = (images, colours, shapes), half of every batch comes from those."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1000)
    oracle = Oracle()
    opt = torch.optim.Adam(oracle.parameters(), lr=3e-3)
    ce = nn.functional.cross_entropy
    n_generated = 0 if generated is None else batch // 2
    for _ in range(steps):
        x, c, s = training_batch(batch - n_generated, size, gen)
        if generated is not None:
            idx = torch.randint(len(generated[0]), (n_generated,), generator=gen)
            x, c, s = (torch.cat([a, g[idx]]) for a, g in zip((x, c, s), generated, strict=True))
        lc, ls = oracle(x)
        loss = ce(lc, c) + ce(ls, s)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return oracle.eval().requires_grad_(False)


@torch.no_grad()
def accuracy(oracle: Oracle, x: torch.Tensor, c: torch.Tensor, s: torch.Tensor) -> dict:
    """Colour and shape accuracy (%) of argmax labels."""
    lc, ls = oracle(x)
    return {
        "colour_acc": 100 * float((lc.argmax(-1) == c).float().mean()),
        "shape_acc": 100 * float((ls.argmax(-1) == s).float().mean()),
        "both_acc": 100 * float(((lc.argmax(-1) == c) & (ls.argmax(-1) == s)).float().mean()),
    }


@torch.no_grad()
def noise_reading(oracle: Oracle, x: torch.Tensor, target: tuple[int, int]) -> dict:
    """What the judge reads on images with no content: % labelled the target colour, the
    target shape, both, and the mean probability it gives to the target combination."""
    lc, ls = oracle(x)
    pc, ps = lc.softmax(-1), ls.softmax(-1)
    col, shp = pc.argmax(-1) == target[0], ps.argmax(-1) == target[1]
    return {
        "reads_colour": 100 * float(col.float().mean()),
        "reads_shape": 100 * float(shp.float().mean()),
        "reads_combination": 100 * float((col & shp).float().mean()),
        "combination_conf": float((pc[:, target[0]] * ps[:, target[1]]).mean()),
    }


SDEDIT_T = (400, 600)
"""Noise levels t0 of the SDEdit validation images (of T = 1000)."""


@torch.no_grad()
def generated_validation_set(
    unet, text_encoder, n: int, size: int, steps: int, guidance: float, t_init: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Held-out generated images with known labels: renders of colour+shape prompts noised to
    t_init and denoised by the model with the true prompt (SDEdit)."""
    from . import models

    gen = torch.Generator().manual_seed(seed)
    prompts = [f"{data.BASE_COLOURS[i % 4]} {data.BASE_SHAPES[(i // 4) % 4]}" for i in range(n)]
    x0, c, s = data.render_batch(prompts, size, gen)
    # at least 10 DDIM steps, so that every t_init >= 100 has a timestep to start from
    x = models.sample(unet, text_encoder, prompts, size, max(steps, 10), guidance, gen, x0, t_init)
    return x.cpu(), c, s


def validate_judge(
    oracle: Oracle, unet, text_encoder, size: int, steps: int, guidance: float, seed: int
) -> dict[str, float]:
    """The judge's accuracy (%) on fresh renders, on held-out SDEdit-generated images at each
    t0 in SDEDIT_T, and what it reads on pure noise (target: red circle)."""
    gen = torch.Generator().manual_seed(seed + 77)
    x, c, s = data.render_batch(data.random_prompts(512, gen, p_empty=0.0), size, gen)
    out = {f"render_{k}": v for k, v in accuracy(oracle, x, c, s).items()}
    for t0 in SDEDIT_T:
        xg, cg, sg = generated_validation_set(
            unet, text_encoder, 256, size, steps, guidance, t0, seed + 500 + t0
        )
        out.update({f"sdedit{t0}_{k}": v for k, v in accuracy(oracle, xg, cg, sg).items()})
    red, circle = data.expected_classes("red circle")
    noise = noise_reading(oracle, pure_noise(512, size, gen), (red, circle))
    out.update({f"noise_{k}": v for k, v in noise.items()})
    return out
