"""Linear probes per layer and position for the result (paper: Adam, lr 3e-4, batch 32, 80/20)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def probe_accuracy(
    feats: torch.Tensor, labels: torch.Tensor, n_classes: int, epochs: int, seed: int
) -> float:
    """Train a linear probe on 80% of (feats, labels), return held-out accuracy on 20%."""
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(feats), generator=gen)
    cut = int(0.8 * len(feats))
    tr, te = perm[:cut], perm[cut:]
    mu, sd = feats[tr].mean(0), feats[tr].std(0) + 1e-6
    x = (feats - mu) / sd
    torch.manual_seed(seed)
    probe = nn.Linear(feats.shape[1], n_classes)
    opt = torch.optim.Adam(probe.parameters(), lr=3e-4)
    for _ in range(epochs):
        order = tr[torch.randperm(len(tr), generator=gen)]
        for i in range(0, len(order), 32):
            b = order[i : i + 32]
            loss = nn.functional.cross_entropy(probe(x[b]), labels[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    with torch.no_grad():
        return float((probe(x[te]).argmax(-1) == labels[te]).float().mean())


@torch.no_grad()
def residual_streams(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """[layers + 1, N, T, d_model]: the residual stream before the first and after each layer."""
    return torch.stack(model(input_ids=tokens, output_hidden_states=True).hidden_states)


def probe_grid(
    model: nn.Module,
    tokens: torch.Tensor,
    labels: np.ndarray,
    n_classes: int,
    epochs: int,
    seed: int,
) -> np.ndarray:
    """[layers + 1, T] held-out probe accuracy for the result at every layer and position."""
    hs = residual_streams(model, tokens)
    y = torch.as_tensor(labels)
    return np.array(
        [
            [
                probe_accuracy(hs[layer, :, pos], y, n_classes, epochs, seed)
                for pos in range(hs.shape[2])
            ]
            for layer in range(hs.shape[0])
        ]
    )
