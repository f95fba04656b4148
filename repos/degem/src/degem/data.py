"""Graphs: the contextual SBM generator, the paper's three OOD shifts, splits, an .npz loader.

Everything here is a deterministic function of its seed. Nothing is downloaded.
"""

from __future__ import annotations

import dataclasses
import pickle
import zipfile
from pathlib import Path

import numpy as np
import torch
from torch_geometric.io import read_npz
from torch_geometric.utils import homophily, stochastic_blockmodel_graph, to_undirected


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
    g = torch.Generator().manual_seed(seed + MEANS_SEED_OFFSET)
    means = torch.randn(n_classes, feat_dim, generator=g)
    means = class_sep * means / means.norm(dim=1, keepdim=True)
    x = means[y] + torch.randn(n_nodes, feat_dim, generator=g)
    return Graph(x=x, edge_index=edge_index, y=y)


MEANS_SEED_OFFSET = 7919


def class_means(n_classes: int, feat_dim: int, class_sep: float, seed: int) -> torch.Tensor:
    """The class means mu_y that csbm(..., seed) draws (same generator, same order)."""
    g = torch.Generator().manual_seed(seed + MEANS_SEED_OFFSET)
    means = torch.randn(n_classes, feat_dim, generator=g)
    return class_sep * means / means.norm(dim=1, keepdim=True)


def generative_score(
    graph: Graph, labels: torch.Tensor, means: torch.Tensor, probs: torch.Tensor, classes
) -> torch.Tensor:
    """Oracle knowledge: log-likelihood of each node under the true ID generator (reported only).

    log sum_{c in classes} N(x_i; mu_c, I) prod_{j in N(i)} P[c, y_j], with the true labels of the
    neighbours (`labels`) and the true SBM probabilities; the non-edge term is the same for every
    class (every row of P has the same expected degree) and is dropped. It knows what the
    detectors do not, but it is the ID density, not the likelihood ratio, so it is not an upper
    bound for every shift (an interpolated feature vector can be *more* likely than a real one).
    """
    cls = torch.as_tensor(list(classes), dtype=torch.long)
    x = graph.x.double()
    feat = -0.5 * torch.cdist(x, means[cls].double().to(x.device)).pow(2)  # (n, |classes|)
    logp = probs.clamp(min=1e-6).log().to(x.device)[cls][:, labels[graph.edge_index[1]]]  # (c, E)
    edge = torch.zeros(graph.n, cls.numel(), dtype=torch.float64, device=x.device)
    edge.index_add_(0, graph.edge_index[0], logp.T)
    return torch.logsumexp(feat + edge, dim=1).float()


def edge_homophily(edge_index: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of edges joining nodes of the same class (PyG's homophily, method='edge')."""
    return float(homophily(edge_index, y, method="edge"))


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


def split(y: torch.Tensor, ood_classes: tuple[int, ...], train_frac: float, seed: int, ignore=()):
    """Random train / validation / test node indices; OOD-class nodes are never in train/val.

    Returns (train, val, test_id, test_ood) long tensors; test_ood holds the held-out classes.
    Nodes of the `ignore` classes are in none of them (the official label protocol leaves one
    class out of both ID and test OOD: it is its OOD-exposure class).
    """
    g = torch.Generator().manual_seed(seed + 15485863)
    is_ood = torch.isin(y, torch.tensor(ood_classes, dtype=y.dtype))
    ignored = torch.isin(y, torch.tensor(tuple(ignore), dtype=y.dtype))
    is_ood = is_ood & ~ignored
    id_nodes = torch.nonzero(~is_ood & ~ignored).squeeze(1)
    id_nodes = id_nodes[torch.randperm(id_nodes.numel(), generator=g)]
    k = max(1, round(train_frac * id_nodes.numel()))
    return id_nodes[:k], id_nodes[k : 2 * k], id_nodes[2 * k :], torch.nonzero(is_ood).squeeze(1)


def load_npz(path: str | Path) -> Graph:
    """Read a graph in the .npz format of PyG's CitationFull / Amazon files (CSR arrays).

    Keys: adj_data, adj_indices, adj_indptr, adj_shape, labels, and the features either as CSR
    arrays attr_data, attr_indices, attr_indptr, attr_shape (read by PyG's `read_npz`, which also
    binarises them, as CitationFull does) or as a dense attr_matrix (kept as stored). Edges are
    symmetrised and self-loops dropped. Any unreadable or inconsistent file raises a one-line
    ValueError naming the file.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no such graph file: {path}")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is not a .npz graph file (not a zip archive)")
    try:
        with np.load(path, allow_pickle=False) as f:
            keys = set(f.files)
            missing = {"adj_data", "adj_indices", "adj_indptr", "adj_shape", "labels"} - keys
            csr_attr = {"attr_data", "attr_indices", "attr_indptr", "attr_shape"} <= keys
            if not (csr_attr or "attr_matrix" in keys):
                missing |= {"attr_matrix (or attr_data, attr_indices, attr_indptr, attr_shape)"}
            if missing:
                raise ValueError(f"lacks the keys {sorted(missing)} of the .npz graph format")
            if csr_attr:
                d = read_npz(str(path))
                x, ei, y = d.x, d.edge_index, d.y
            else:
                n = int(f["adj_shape"][0])
                rows = np.repeat(np.arange(n), np.diff(f["adj_indptr"]))
                ei = torch.as_tensor(np.stack([rows, f["adj_indices"]]), dtype=torch.long)
                ei = to_undirected(ei[:, ei[0] != ei[1]], num_nodes=n)
                x = torch.as_tensor(np.asarray(f["attr_matrix"], dtype=np.float32))
                y = torch.as_tensor(np.asarray(f["labels"], dtype=np.int64))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    except (OSError, EOFError, KeyError, IndexError, TypeError) as exc:  # not a readable .npz
        raise ValueError(
            f"{path} is not a readable .npz graph file ({type(exc).__name__})"
        ) from None
    y = y.reshape(-1).long()
    if x.dim() != 2 or y.shape[0] != x.shape[0]:
        raise ValueError(f"{path}: {tuple(y.shape)} labels for features of shape {tuple(x.shape)}")
    if ei.numel() and (int(ei.max()) >= x.shape[0] or int(ei.min()) < 0):
        raise ValueError(f"{path}: edges name nodes outside [0, {x.shape[0]})")
    if int(y.min()) < 0:
        raise ValueError(f"{path}: labels must be >= 0, found {int(y.min())}")
    return Graph(x=x.float(), edge_index=ei, y=y)


GEOM_GCN_NODES = "out1_node_feature_label.txt"
GEOM_GCN_EDGES = "out1_graph_edges.txt"


def _undirected(ei: torch.Tensor, n: int) -> torch.Tensor:
    """Symmetrise, drop self-loops and duplicate edges (the Graph contract)."""
    return to_undirected(ei[:, ei[0] != ei[1]], num_nodes=n)


def load_geom_gcn(folder: str | Path) -> Graph:
    """Read a graph in the geom-gcn raw format (Actor / WebKB / Wikipedia: the files PyG's Actor and
    WebKB datasets read): `out1_node_feature_label.txt` (header, then `id<TAB>features<TAB>label`,
    features a dense 0/1 comma list or, for Actor, the comma list of the non-zero columns) and
    `out1_graph_edges.txt` (header, then `src<TAB>dst`). Edges are symmetrised (as the official
    code's `to_undirected`) and self-loops dropped. A bad file is a one-line ValueError naming it.
    """
    folder = Path(folder)
    nodes_file, edges_file = folder / GEOM_GCN_NODES, folder / GEOM_GCN_EDGES
    for f in (nodes_file, edges_file):
        if not f.is_file():
            raise ValueError(f"no such graph file: {f} (a geom-gcn folder holds both out1_*.txt)")
    try:
        rows = [ln.split("\t") for ln in nodes_file.read_text().splitlines()[1:] if ln.strip()]
        if not rows or any(len(r) != 3 for r in rows):
            raise ValueError("expected lines 'node_id<TAB>features<TAB>label' after a header")
        ids = [int(r[0]) for r in rows]
        feats = [[int(v) for v in r[1].split(",")] for r in rows]
        labels = [int(r[2]) for r in rows]
    except ValueError as exc:
        raise ValueError(f"{nodes_file}: {exc}") from None
    n = max(ids) + 1
    if sorted(ids) != list(range(n)):
        raise ValueError(f"{nodes_file}: node ids must be 0..{n - 1}, each once")
    dense = len({len(f) for f in feats}) == 1 and all(v in (0, 1) for f in feats for v in f)
    if dense and "feature_amount" not in nodes_file.read_text().splitlines()[0]:
        x = torch.zeros(n, len(feats[0]))
        x[torch.tensor(ids)] = torch.tensor(feats, dtype=torch.float32)
    else:  # column indices of the non-zero features (Actor), as PyG's Actor reads them
        r = torch.tensor([i for i, f in zip(ids, feats) for _ in f], dtype=torch.long)
        c = torch.tensor([v for f in feats for v in f], dtype=torch.long)
        if int(c.min()) < 0:
            raise ValueError(f"{nodes_file}: negative feature index {int(c.min())}")
        x = torch.zeros(n, int(c.max()) + 1)
        x[r, c] = 1.0
    y = torch.empty(n, dtype=torch.long)
    y[torch.tensor(ids)] = torch.tensor(labels)
    try:
        pairs = [ln.split("\t") for ln in edges_file.read_text().splitlines()[1:] if ln.strip()]
        ei = torch.tensor([[int(a), int(b)] for a, b in pairs], dtype=torch.long).reshape(-1, 2).T
    except ValueError:
        raise ValueError(f"{edges_file}: expected lines 'src<TAB>dst' after a header") from None
    if ei.numel() and (int(ei.max()) >= n or int(ei.min()) < 0):
        raise ValueError(f"{edges_file}: edges name nodes outside [0, {n})")
    if int(y.min()) < 0:
        raise ValueError(f"{nodes_file}: labels must be >= 0, found {int(y.min())}")
    return Graph(x=x, edge_index=_undirected(ei, n), y=y)


PLANETOID_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


def load_planetoid(path: str | Path) -> Graph:
    """Read a graph in the Planetoid raw format (`ind.<name>.{x,tx,allx,y,ty,ally,graph,
    test.index}`, pickled by the Planetoid authors) with PyG's `read_planetoid_data`; `path` is
    one of the files or their folder (holding one name). Edges symmetrised, no self-loops.
    The files are Python pickles: read only files you trust.
    """
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    if path.is_dir():
        names = sorted({p.name.split(".")[1] for p in folder.glob("ind.*.graph")})
        if len(names) != 1:
            raise ValueError(f"{folder}: expected the files of one Planetoid graph, found {names}")
        prefix = names[0]
    else:
        parts = path.name.split(".")
        if len(parts) < 3 or parts[0] != "ind":
            raise ValueError(f"{path}: a Planetoid file is named ind.<name>.<part>")
        prefix = parts[1]
    missing = [p for p in PLANETOID_PARTS if not (folder / f"ind.{prefix}.{p}").is_file()]
    if missing:
        raise ValueError(f"{folder}: the Planetoid graph {prefix!r} lacks ind.{prefix}.{missing}")
    from torch_geometric.io import read_planetoid_data

    try:
        d = read_planetoid_data(str(folder), prefix)
    except (
        OSError,
        EOFError,
        ValueError,
        IndexError,
        KeyError,
        TypeError,
        AttributeError,
        pickle.UnpicklingError,
    ) as exc:
        # a corrupt or foreign pickle
        raise ValueError(
            f"{folder}/ind.{prefix}.*: not a readable Planetoid graph ({type(exc).__name__})"
        ) from None
    return Graph(x=d.x.float(), edge_index=_undirected(d.edge_index, d.num_nodes), y=d.y.long())


def normalize_features(graph: Graph) -> Graph:
    """Row-normalise the features to sum 1, as PyG's NormalizeFeatures (the official transform)."""
    from torch_geometric.data import Data
    from torch_geometric.transforms import NormalizeFeatures

    x = NormalizeFeatures()(Data(x=graph.x.clone())).x
    return dataclasses.replace(graph, x=x)


def load_graph(path: str | Path, normalize: bool = True) -> Graph:
    """A graph file in any of the formats read here, chosen by its name: a Planetoid raw file or
    folder (`ind.<name>.*`), a geom-gcn folder or its `out1_*.txt`, or a CitationFull / Amazon
    `.npz`; with normalize, features row-normalised (NormalizeFeatures)."""
    path = Path(path)
    if path.name in (GEOM_GCN_NODES, GEOM_GCN_EDGES):
        path = path.parent
    if path.is_dir() and (path / GEOM_GCN_NODES).exists():
        g = load_geom_gcn(path)
    elif path.name.startswith("ind.") or (path.is_dir() and any(path.glob("ind.*.graph"))):
        g = load_planetoid(path)
    elif path.is_dir():
        raise ValueError(f"{path}: neither a geom-gcn nor a Planetoid graph folder")
    else:
        g = load_npz(path)
    return normalize_features(g) if normalize else g
