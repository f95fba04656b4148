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


# --- a second, independent judge: no training, template matching on the rendered shapes -------

TEMPLATE_KINDS = ("disk", "ring", "square", "triangle", "cross")
FOREGROUND_MIN = 0.04
"""Share of pixels that must differ from the background for the template judge to see a shape."""
FOREGROUND_MAX = 0.75
"""Above this share the foreground is noise, not a shape (the largest render covers ~0.5)."""
IOU_MIN = 0.5
"""Best template IoU below which the template judge reads no shape (and no colour)."""


def _templates(size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Binary masks (K, size*size) of every shape kind over a grid of radii and centres (the
    renderer's ranges), and the shape class of each."""
    masks, classes = [], []
    for kind in TEMPLATE_KINDS:
        cls = data.SHAPE_CLASSES.index(data.SHAPES["circle" if kind in ("disk", "ring") else kind])
        for r in (size * f for f in (0.32, 0.36, 0.40)):
            lo, hi = r, size - r
            for cy in torch.linspace(lo, hi, 7):
                for cx in torch.linspace(lo, hi, 7):
                    masks.append(data._shape_mask(kind, size, float(cx), float(cy), r).flatten())
                    classes.append(cls)
    return torch.stack(masks), torch.tensor(classes)


@torch.no_grad()
def template_judge(images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Colour and shape labels (indices into COLOURS / SHAPES; last = none) of images in [-1, 1]:
    the background is the median of the border pixels, the foreground every pixel more than 0.25
    away from it; colour is the nearest base colour to the foreground's mean, shape the shape
    kind of the template with the highest IoU with the foreground (none below IOU_MIN). Nothing learned, so it
    shares no failure mode with the CNN."""
    x = (images.detach().cpu().float() + 1) / 2
    h = x.shape[2]
    border = torch.cat([x[:, :, 0], x[:, :, -1], x[:, :, :, 0], x[:, :, :, -1]], dim=2)
    background = border.median(dim=2).values  # (n, 3)
    fg = (x - background[:, :, None, None]).abs().amax(1) > 0.25  # (n, h, w)
    share = fg.flatten(1).float().mean(1)
    weight = fg.unsqueeze(1).float()
    mean_rgb = (x * weight).sum((2, 3)) / weight.sum((2, 3)).clamp(min=1)
    protos = torch.tensor([data.COLOURS[c][1] for c in data.BASE_COLOURS])
    colour = torch.cdist(mean_rgb, protos).argmin(1)
    masks, classes = _templates(h)
    f = fg.flatten(1).float()
    inter = f @ masks.T
    union = f.sum(1, keepdim=True) + masks.sum(1)[None] - inter
    iou, best = (inter / union.clamp(min=1)).max(1)
    shape = classes[best]
    none = (share < FOREGROUND_MIN) | (share > FOREGROUND_MAX) | (iou < IOU_MIN)
    colour[none] = len(COLOURS) - 1
    shape[none] = len(SHAPES) - 1
    return colour, shape


AGREEMENT_PROMPTS = tuple(f"{c} {s}" for c in data.BASE_COLOURS for s in data.BASE_SHAPES)


@torch.no_grad()
def judge_agreement(
    oracle: Oracle,
    unet,
    text_encoder,
    size: int,
    steps: int,
    guidance: float,
    seed: int,
    n: int = 32,
    prompts: tuple[str, ...] = AGREEMENT_PROMPTS,
) -> dict:
    """Both judges on full samples of the original model: per prompt, the shape (and colour)
    each judge reads (counts over SHAPES / COLOURS, none last) and how often the two agree;
    overall shape and colour agreement (%) and each judge's hit rate on the prompt's classes."""
    from . import models

    gen = torch.Generator().manual_seed(seed + 4242)
    all_prompts = [p for p in prompts for _ in range(n)]
    images = torch.cat(
        [
            models.sample(unet, text_encoder, all_prompts[i : i + 256], size, steps, guidance, gen)
            for i in range(0, len(all_prompts), 256)
        ]
    ).cpu()
    lc, ls = oracle(images)
    cnn_c, cnn_s = lc.argmax(-1), ls.argmax(-1)
    tpl_c, tpl_s = template_judge(images)
    table = {}
    for i, prompt in enumerate(prompts):
        sl = slice(i * n, (i + 1) * n)
        want_c, want_s = data.expected_classes(prompt)
        table[prompt] = {
            "cnn_colour_hit": 100 * float((cnn_c[sl] == want_c).float().mean()),
            "template_colour_hit": 100 * float((tpl_c[sl] == want_c).float().mean()),
            "cnn_shape": torch.bincount(cnn_s[sl], minlength=len(SHAPES)).tolist(),
            "template_shape": torch.bincount(tpl_s[sl], minlength=len(SHAPES)).tolist(),
            "cnn_colour": torch.bincount(cnn_c[sl], minlength=len(COLOURS)).tolist(),
            "template_colour": torch.bincount(tpl_c[sl], minlength=len(COLOURS)).tolist(),
            "shape_agree": 100 * float((cnn_s[sl] == tpl_s[sl]).float().mean()),
            "cnn_shape_hit": 100 * float((cnn_s[sl] == want_s).float().mean()),
            "template_shape_hit": 100 * float((tpl_s[sl] == want_s).float().mean()),
        }
    return {
        "labels_shape": list(SHAPES),
        "labels_colour": list(COLOURS),
        "samples_per_prompt": n,
        "shape_agree": 100 * float((cnn_s == tpl_s).float().mean()),
        "colour_agree": 100 * float((cnn_c == tpl_c).float().mean()),
        "both_agree": 100 * float(((cnn_s == tpl_s) & (cnn_c == tpl_c)).float().mean()),
        "per_prompt": table,
    }
