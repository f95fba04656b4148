"""Graphs: the contextual SBM generator, the paper's three OOD shifts, splits, an .npz loader.

Everything here is a deterministic function of its seed. Nothing is downloaded.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch
from torch_geometric.utils import stochastic_blockmodel_graph, to_undirected


@dataclasses.dataclass(frozen=True)
class Graph:
    x: torch.Tensor
    """(n, d) float node features."""
    edge_index: torch.Tensor
    """(2, E) long, undirected (both directions stored), no self-loops."""
    y: torch.Tensor
    """(n,) long class labels."""

    @property
    def n(self) -> int:
        return self.x.shape[0]


def check_graph(graph: Graph, n_classes: int) -> Graph:
    """Raise ValueError on an edgeless graph or labels outside [0, n_classes); return graph."""
    if graph.edge_index.numel() == 0:
        raise ValueError("the graph has no edges; graph OOD detectors need at least one edge")
    if graph.y.shape[0] != graph.n:
        raise ValueError(f"{graph.y.shape[0]} labels for {graph.n} nodes")
    lo, hi = int(graph.y.min()), int(graph.y.max())
    if lo < 0 or hi >= n_classes:
        raise ValueError(f"labels must lie in [0, {n_classes}), found values in [{lo}, {hi}]")
    if int(graph.edge_index.max()) >= graph.n or int(graph.edge_index.min()) < 0:
        raise ValueError(f"edge_index names nodes outside [0, {graph.n})")
    return graph


def _sbm_edges(block_of: torch.Tensor, probs: torch.Tensor, seed: int) -> torch.Tensor:
    """PyG's SBM sampler on nodes whose block ids are block_of (any order), seeded locally."""
    order = torch.argsort(block_of, stable=True)
    sizes = torch.bincount(block_of, minlength=probs.shape[0])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        ei = stochastic_blockmodel_graph(sizes, probs.clamp(0.0, 1.0))
    return order[ei]


def block_probs(n_classes: int, block_size: float, mean_degree: float, h: float, pattern: str):
    """Edge probabilities giving expected edge homophily h and expected degree mean_degree."""
    c, d = n_classes, mean_degree
    probs = torch.zeros(c, c, dtype=torch.float64)
    probs.fill_diagonal_(h * d / block_size)
    for a in range(c):
        if pattern == "random":
            for b in range(c):
                if b != a:
                    probs[a, b] = (1 - h) * d / ((c - 1) * block_size)
        else:  # cyclic: class c links to c+1 and c-1 only (structured heterophily)
            for b in ((a + 1) % c, (a - 1) % c):
                probs[a, b] += (1 - h) * d / (2 * block_size)
    return probs


def csbm(
    n_nodes: int,
    n_classes: int,
    feat_dim: int,
    class_sep: float,
    mean_degree: float,
    homophily: float,
    pattern: str,
    seed: int,
) -> Graph:
    """Contextual SBM: PyG SBM edges with target homophily, features mu_y + N(0, I)."""
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"homophily must lie in [0, 1], got {homophily}")
    if n_classes < 2:
        raise ValueError(f"n_classes must be >= 2, got {n_classes}")
    y = torch.arange(n_nodes) % n_classes
    probs = block_probs(n_classes, n_nodes / n_classes, mean_degree, homophily, pattern)
    edge_index = _sbm_edges(y, probs, seed)
    g = torch.Generator().manual_seed(seed + 7919)
    means = torch.randn(n_classes, feat_dim, generator=g)
    means = class_sep * means / means.norm(dim=1, keepdim=True)
    x = means[y] + torch.randn(n_nodes, feat_dim, generator=g)
    return Graph(x=x, edge_index=edge_index, y=y)


def edge_homophily(edge_index: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of edges joining nodes of the same class."""
    return float((y[edge_index[0]] == y[edge_index[1]]).float().mean())


def density(graph: Graph) -> float:
    """Edges over node pairs (both directions counted, as stored)."""
    return graph.edge_index.shape[1] / (graph.n * (graph.n - 1))


def structure_shift(graph: Graph, n_blocks: int, seed: int) -> Graph:
    """Structure OOD: edges replaced by an SBM with p_in = 1.5 d', p_out = 0.5 d' on random blocks.

    d' is the ID density rescaled so that the OOD graph keeps the ID density in expectation.
    """
    g = torch.Generator().manual_seed(seed + 104729)
    blocks = torch.randperm(graph.n, generator=g) % n_blocks
    d = density(graph)
    scale = (1.5 + 0.5 * (n_blocks - 1)) / n_blocks
    probs = torch.full((n_blocks, n_blocks), 0.5 * d / scale, dtype=torch.float64)
    probs.fill_diagonal_(1.5 * d / scale)
    return dataclasses.replace(graph, edge_index=_sbm_edges(blocks, probs, seed))


def feature_shift(graph: Graph, seed: int) -> Graph:
    """Feature OOD: each node's features interpolated with a random node's, weight w ~ U(0, 1)."""
    g = torch.Generator().manual_seed(seed + 1299709)
    partner = torch.randint(graph.n, (graph.n,), generator=g)
    w = torch.rand(graph.n, 1, generator=g)
    return dataclasses.replace(graph, x=w * graph.x + (1 - w) * graph.x[partner])


def split(y: torch.Tensor, ood_classes: tuple[int, ...], train_frac: float, seed: int):
    """Random train / validation / test node indices; OOD-class nodes are never in train/val.

    Returns (train, val, test_id, test_ood) long tensors; test_ood holds the held-out classes.
    """
    g = torch.Generator().manual_seed(seed + 15485863)
    is_ood = torch.isin(y, torch.tensor(ood_classes, dtype=y.dtype))
    id_nodes = torch.nonzero(~is_ood).squeeze(1)
    id_nodes = id_nodes[torch.randperm(id_nodes.numel(), generator=g)]
    k = max(1, round(train_frac * id_nodes.numel()))
    return id_nodes[:k], id_nodes[k : 2 * k], id_nodes[2 * k :], torch.nonzero(is_ood).squeeze(1)


def load_npz(path: str | Path) -> Graph:
    """Read a graph in the .npz format of PyG's CitationFull / Amazon files (CSR arrays).

    Keys: adj_data, adj_indices, adj_indptr, adj_shape; attr_matrix (dense) or attr_data,
    attr_indices, attr_indptr, attr_shape (CSR); labels. Edges are symmetrised, self-loops dropped.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"no such graph file: {path}")
    with np.load(path, allow_pickle=False) as f:
        missing = {"adj_indices", "adj_indptr", "adj_shape", "labels"} - set(f.files)
        if missing:
            raise ValueError(f"{path} lacks the keys {sorted(missing)} of the .npz graph format")
        n = int(f["adj_shape"][0])
        indptr, indices = f["adj_indptr"], f["adj_indices"]
        rows = np.repeat(np.arange(n), np.diff(indptr))
        if "attr_matrix" in f.files:
            x = np.asarray(f["attr_matrix"], dtype=np.float32)
        else:
            x = np.zeros(tuple(f["attr_shape"]), dtype=np.float32)
            a_rows = np.repeat(np.arange(x.shape[0]), np.diff(f["attr_indptr"]))
            x[a_rows, f["attr_indices"]] = f["attr_data"]
        labels = np.asarray(f["labels"], dtype=np.int64)
    ei = torch.as_tensor(np.stack([rows, indices]), dtype=torch.long)
    ei = to_undirected(ei[:, ei[0] != ei[1]], num_nodes=n)
    return Graph(x=torch.as_tensor(x), edge_index=ei, y=torch.as_tensor(labels))
