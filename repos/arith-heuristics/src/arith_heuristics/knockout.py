"""Knockouts of heuristic neurons (heuristics_analysis.py): zero-ablation of h_post at the last
position, per heuristic (associated vs unassociated prompts) and per prompt (vs random)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .model import Parts, hooked, last_logits


@torch.no_grad()
def accuracy_with_ablation(
    model: nn.Module,
    parts: Parts,
    tokens: torch.Tensor,
    result: np.ndarray,
    ablate: dict[int, torch.Tensor],
    n_numbers: int,
) -> np.ndarray:
    """Per-prompt correctness with neurons zeroed; ablate[layer] is a [d_mlp] or [N, d_mlp] mask."""

    def edit(i, x):
        if i not in ablate:
            return None
        x = x.clone()
        mask = ablate[i]
        last = x[:, -1, :]
        x[:, -1, :] = torch.where(mask if mask.dim() == 2 else mask[None], 0.0, last)
        return x

    with hooked(parts, mlp=edit):
        pred = last_logits(model, tokens)[:, :n_numbers].argmax(-1).cpu().numpy()
    return pred == result


def neuron_mask(neurons: list[tuple[int, int]], d_mlp: int) -> dict[int, torch.Tensor]:
    """{layer: [d_mlp] bool} marking the given (layer, index) neurons."""
    ablate: dict[int, torch.Tensor] = {}
    for layer, idx in neurons:
        ablate.setdefault(layer, torch.zeros(d_mlp, dtype=torch.bool))[idx] = True
    return ablate


def random_like(
    neurons: list[tuple[int, int]], d_mlp: int, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """As many random neurons per layer as `neurons` has (the equal-size random baseline)."""
    out = []
    for layer in sorted({layer for layer, _ in neurons}):
        count = sum(1 for la, _ in neurons if la == layer)
        out += [(layer, int(i)) for i in rng.choice(d_mlp, count, replace=False)]
    return out


def heuristic_knockout(
    model: nn.Module,
    parts: Parts,
    neurons: list[tuple[int, int]],
    assoc_tokens: torch.Tensor,
    assoc_result: np.ndarray,
    other_tokens: torch.Tensor,
    other_result: np.ndarray,
    n_numbers: int,
) -> tuple[float, float]:
    """Accuracy on associated and on unassociated (correct) prompts with the heuristic's
    neurons, given as (layer, index) pairs, zero-ablated."""
    ablate = neuron_mask(neurons, parts.d_mlp)
    acc = [
        float(accuracy_with_ablation(model, parts, t, r, ablate, n_numbers).mean())
        for t, r in ((assoc_tokens, assoc_result), (other_tokens, other_result))
    ]
    return acc[0], acc[1]


def prompt_masks(
    neuron_scores: np.ndarray, count: int, layers: list[int], d_mlp: int
) -> dict[int, torch.Tensor]:
    """[N, d_mlp] masks of the `count` highest-scoring neurons per layer for each prompt.

    neuron_scores: [N, len(layers), d_mlp] relevance of each neuron to each prompt's heuristics
    (0 where the neuron implements none of them); neurons with score 0 are never picked.
    """
    masks = {}
    for li, layer in enumerate(layers):
        s = torch.as_tensor(neuron_scores[:, li, :])
        top = s.topk(min(count, d_mlp), dim=1)
        m = torch.zeros(s.shape, dtype=torch.bool)
        m.scatter_(1, top.indices, top.values > 0)
        masks[layer] = m
    return masks


def random_masks(
    pools: list[np.ndarray], like: dict[int, torch.Tensor], layers: list[int], seed: int
) -> dict[int, torch.Tensor]:
    """Masks with as many random heuristic neurons (pools[li]: candidates) per prompt and layer
    as the guided masks `like` ablate."""
    rng = np.random.default_rng(seed)
    masks = {}
    for li, layer in enumerate(layers):
        m = torch.zeros_like(like[layer])
        pool = pools[li]
        for row, count in enumerate(like[layer].sum(1).tolist()):
            if len(pool) and count:
                m[row, rng.choice(pool, min(count, len(pool)), replace=False)] = True
        masks[layer] = m
    return masks
