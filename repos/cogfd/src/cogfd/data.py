"""The procedural image world: coloured shapes, a vocabulary with synonyms and sub-types.

Stands in for Stable Diffusion's open world (the paper's HarmfulCmb prompts). A prompt names at
most one colour word and one shape word; the renderer draws a matching 16x16 (quick) or 32x32
(full) RGB image in [-1, 1]. Everything is a deterministic function of the torch Generator.
"""

from __future__ import annotations

import torch

# Colour words -> (oracle class, mean RGB in [0, 1]). crimson/scarlet are red hue variants
# (entailment: more specific reds); ruby is a plain synonym of red (equivalence).
COLOURS: dict[str, tuple[str, tuple[float, float, float]]] = {
    "red": ("red", (0.9, 0.1, 0.1)),
    "crimson": ("red", (0.75, 0.05, 0.25)),
    "scarlet": ("red", (1.0, 0.3, 0.05)),
    "ruby": ("red", (0.9, 0.1, 0.1)),
    "green": ("green", (0.1, 0.8, 0.15)),
    "blue": ("blue", (0.1, 0.2, 0.95)),
    "yellow": ("yellow", (0.95, 0.9, 0.1)),
}
# Shape words -> oracle class. disk (filled) and ring (hollow) are the two kinds of circle.
SHAPES: dict[str, str] = {
    "circle": "circle",
    "disk": "circle",
    "ring": "circle",
    "square": "square",
    "triangle": "triangle",
    "cross": "cross",
}
COLOUR_CLASSES = ("red", "green", "blue", "yellow")
SHAPE_CLASSES = ("circle", "square", "triangle", "cross")
BASE_COLOURS = ("red", "green", "blue", "yellow")
BASE_SHAPES = ("circle", "square", "triangle", "cross")
VOCAB: tuple[str, ...] = tuple(COLOURS) + tuple(SHAPES)
"""Every word a prompt may use (the tiny CLIPTokenizer makes each one token)."""


def parse_prompt(prompt: str) -> tuple[str | None, str | None]:
    """Split a prompt into (colour word, shape word); ValueError on any unknown word."""
    colour = shape = None
    for word in prompt.split():
        if word in COLOURS and colour is None:
            colour = word
        elif word in SHAPES and shape is None:
            shape = word
        else:
            raise ValueError(
                f"prompt {prompt!r}: word {word!r} is not a known colour {sorted(COLOURS)} "
                f"or shape {sorted(SHAPES)} (or repeats one)"
            )
    return colour, shape


def _shape_mask(kind: str, size: int, cx: float, cy: float, r: float) -> torch.Tensor:
    ys, xs = torch.meshgrid(
        torch.arange(size, dtype=torch.float32) + 0.5,
        torch.arange(size, dtype=torch.float32) + 0.5,
        indexing="ij",
    )
    dx, dy = xs - cx, ys - cy
    if kind == "disk":
        return (dx**2 + dy**2 <= r**2).float()
    if kind == "ring":
        d = torch.sqrt(dx**2 + dy**2)
        return ((d <= r) & (d >= 0.55 * r)).float()
    if kind == "square":
        h = 0.8 * r
        return ((dx.abs() <= h) & (dy.abs() <= h)).float()
    if kind == "triangle":
        # apex up: inside when below the two slanted edges and above the base
        return ((dy <= 0.8 * r) & (dy >= -r + 2.0 * dx.abs())).float()
    if kind == "cross":
        w = 0.35 * r
        return (((dx.abs() <= w) & (dy.abs() <= r)) | ((dy.abs() <= w) & (dx.abs() <= r))).float()
    raise ValueError(f"unknown shape kind {kind!r}")


def render(prompt: str, size: int, gen: torch.Generator) -> tuple[torch.Tensor, int, int]:
    """One image (3, size, size) in [-1, 1] for `prompt`, with its oracle colour and shape class.

    An attribute the prompt leaves out is drawn uniformly; a bare "circle" is a disk or a ring.
    """
    colour, shape = parse_prompt(prompt)
    if colour is None:
        colour = BASE_COLOURS[int(torch.randint(4, (1,), generator=gen))]
    if shape is None:
        shape = BASE_SHAPES[int(torch.randint(4, (1,), generator=gen))]
    kind = shape
    if shape == "circle":
        kind = ("disk", "ring")[int(torch.randint(2, (1,), generator=gen))]
    u = torch.rand(6, generator=gen)
    r = size * (0.32 + 0.08 * float(u[0]))
    cx = r + float(u[1]) * (size - 2 * r)
    cy = r + float(u[2]) * (size - 2 * r)
    rgb = torch.tensor(COLOURS[colour][1]) + 0.05 * (torch.rand(3, generator=gen) - 0.5)
    m = _shape_mask(kind, size, cx, cy, r)
    background = 0.15 + 0.1 * float(u[3])
    img = background * (1 - m) + m * rgb.clamp(0, 1)[:, None, None]
    img = img + 0.03 * torch.randn(3, size, size, generator=gen)
    img = (img.clamp(0, 1) * 2 - 1).float()
    colour_cls = COLOUR_CLASSES.index(COLOURS[colour][0])
    shape_cls = SHAPE_CLASSES.index(SHAPES[shape])
    return img, colour_cls, shape_cls


def render_batch(prompts: list[str], size: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Images (B, 3, size, size), colour classes (B,), shape classes (B,)."""
    out = [render(p, size, gen) for p in prompts]
    images = torch.stack([o[0] for o in out])
    return images, torch.tensor([o[1] for o in out]), torch.tensor([o[2] for o in out])


def random_prompts(n: int, gen: torch.Generator, p_empty: float = 0.1) -> list[str]:
    """Pretraining prompts: 70% colour+shape, 10% colour, 10% shape, p_empty empty (for CFG)."""
    colours, shapes = list(COLOURS), list(SHAPES)
    prompts = []
    for _ in range(n):
        u = float(torch.rand(1, generator=gen))
        c = colours[int(torch.randint(len(colours), (1,), generator=gen))]
        s = shapes[int(torch.randint(len(shapes), (1,), generator=gen))]
        rest = 1.0 - p_empty
        if u < p_empty:
            prompts.append("")
        elif u < p_empty + rest * 7 / 9:
            prompts.append(f"{c} {s}")
        elif u < p_empty + rest * 8 / 9:
            prompts.append(c)
        else:
            prompts.append(s)
    return prompts


def expected_classes(prompt: str) -> tuple[int | None, int | None]:
    """Oracle classes a prompt asks for (None where the prompt leaves the attribute free)."""
    colour, shape = parse_prompt(prompt)
    c = None if colour is None else COLOUR_CLASSES.index(COLOURS[colour][0])
    s = None if shape is None else SHAPE_CLASSES.index(SHAPES[shape])
    return c, s
