"""Baselines on one GCN classifier: MSP, Energy, and GNNSafe (Wu et al., ICLR 2023).

MSP scores a node by its largest softmax probability, Energy by T logsumexp(logits / T), and
GNNSafe propagates that energy score over the graph: e <- alpha e + (1 - alpha) D^-1 A e.
A diagnostic reference, not from either paper: one Gaussian density fitted to embeddings of the
training nodes, scored by the negative Mahalanobis distance (used on DeGEM's latent z, it asks
whether the encoder's space separates ID from OOD nodes, independently of the energy head).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv


class GCN(nn.Module):
    """2-layer GCN (PyG GCNConv) with dropout between the layers."""

    def __init__(self, in_dim: int, hidden: int, n_classes: int, dropout: float):
        super().__init__()
        self.conv1, self.conv2 = GCNConv(in_dim, hidden), GCNConv(hidden, n_classes)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        h = F.dropout(F.relu(self.conv1(x, edge_index)), self.dropout, self.training)
        return self.conv2(h, edge_index)


def msp_score(logits: torch.Tensor) -> torch.Tensor:
    """Maximum softmax probability (higher = more in-distribution)."""
    return logits.softmax(dim=-1).max(dim=-1).values


def energy_score(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Negative energy -E = T logsumexp(logits / T) (higher = more in-distribution)."""
    return temperature * torch.logsumexp(logits / temperature, dim=-1)


def propagate_energy(
    score: torch.Tensor, edge_index: torch.Tensor, layers: int, alpha: float
) -> torch.Tensor:
    """GNNSafe: K rounds of e <- alpha e + (1 - alpha) D^-1 A e; isolated nodes get 0 from D^-1 A."""
    n = score.shape[0]
    row = edge_index[0]
    deg = torch.bincount(row, minlength=n).to(score.dtype)
    values = 1.0 / deg[row]  # row-normalised: mean over neighbours
    adj = torch.sparse_coo_tensor(edge_index, values, (n, n), check_invariants=False).coalesce()
    e = score.unsqueeze(1)
    for _ in range(layers):
        e = alpha * e + (1 - alpha) * torch.sparse.mm(adj, e)
    return e.squeeze(1)


def gaussian_fit(z: torch.Tensor, ridge: float = 1e-3) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and precision (inverse of covariance + ridge I) of the rows of z, in float64."""
    z = z.double()
    mean = z.mean(dim=0)
    cov = torch.cov(z.T).reshape(z.shape[1], z.shape[1])
    return mean, torch.linalg.inv(cov + ridge * torch.eye(z.shape[1], dtype=z.dtype))


def gaussian_score(z: torch.Tensor, mean: torch.Tensor, precision: torch.Tensor) -> torch.Tensor:
    """-(z - mean)^T P (z - mean) per row (higher = more in-distribution)."""
    d = z.double() - mean
    return -((d @ precision) * d).sum(dim=1).to(z.dtype)
