"""Comparison auxiliary tasks with the same interface as EMPP, and PyG SchNet as a peer model.

- coordinate denoising (Noisy Nodes / pre-training via denoising): add N(0, sigma^2) to every
  coordinate and predict the noise with an equivariant vector (1o) output per atom;
- element (attribute) masking: replace one atom's element by a mask token and classify it.
"""

from __future__ import annotations

import numpy as np
import torch
from e3nn import o3
from torch import nn

from .data import ELEMENTS
from .model import Batch, radius_graph

MASK_TOKEN = len(ELEMENTS)


class DenoiseHead(nn.Module):
    """Per-atom equivariant noise prediction from the final node features."""

    def __init__(self, irreps_node: o3.Irreps):
        super().__init__()
        self.lin = o3.Linear(irreps_node, o3.Irreps("1x1o"))

    def loss(self, net, b: Batch, sigma: float, gen: torch.Generator) -> torch.Tensor:
        noise = torch.randn(b.pos.shape, generator=gen).to(b.pos.device)
        noisy = Batch(b.species, b.pos + sigma * noise, b.batch, b.num_graphs, b.y)
        _, h = net(noisy)
        return (self.lin(h) - noise).pow(2).sum(-1).mean()


class ElementMaskHead(nn.Module):
    """Classify the element of one masked atom per molecule from its scalar features."""

    def __init__(self, n_scalars: int):
        super().__init__()
        self.n_scalars = n_scalars
        self.classify = nn.Sequential(
            nn.Linear(n_scalars, n_scalars), nn.SiLU(), nn.Linear(n_scalars, len(ELEMENTS))
        )

    def loss(self, net, b: Batch, rng: np.random.Generator) -> torch.Tensor:
        sizes = torch.bincount(b.batch, minlength=b.num_graphs).cpu().numpy()
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        idx = torch.as_tensor(starts + (rng.random(b.num_graphs) * sizes).astype(int))
        species = b.species.clone()
        species[idx] = MASK_TOKEN
        _, h = net(Batch(species, b.pos, b.batch, b.num_graphs, b.y))
        return nn.functional.cross_entropy(self.classify(h[idx, : self.n_scalars]), b.species[idx])


class CdistGraph(nn.Module):
    """SchNet's interaction graph without torch_cluster: (edge_index, edge_weight)."""

    def __init__(self, cutoff: float):
        super().__init__()
        self.cutoff = cutoff

    def forward(self, pos: torch.Tensor, batch: torch.Tensor):
        edge_index = radius_graph(pos, batch, self.cutoff)
        src, dst = edge_index
        return edge_index, (pos[src] - pos[dst]).norm(dim=-1)


class SchNetPeer(nn.Module):
    """PyG SchNet at a size comparable to our network; same forward signature (pred, None)."""

    def __init__(self, cutoff: float, readout: str, hidden: int = 32):
        super().__init__()
        from torch_geometric.nn.models import SchNet

        self.net = SchNet(
            hidden_channels=hidden,
            num_filters=hidden,
            num_interactions=3,
            num_gaussians=25,
            cutoff=cutoff,
            interaction_graph=CdistGraph(cutoff),
            readout="add" if readout == "sum" else "mean",
        )

    def forward(self, b: Batch, cond=None):
        z = torch.as_tensor(ELEMENTS, device=b.species.device)[b.species]
        return self.net(z, b.pos, b.batch).squeeze(-1), None
