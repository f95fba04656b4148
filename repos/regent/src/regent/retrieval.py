"""Retrieval (exact L2), the p95 distance normaliser and Retrieve-and-Play (R&P).

R&P (Sec. 3 of the paper): the action of the nearest demonstration state, a(s) = a'_1.
REGENT's context: the n nearest demonstration states, closest first.

Index choice, measured (results/figures/knn_by_dimension.png and the first pass's rows): for the
offline all-rows search of pretraining, scikit-learn's k-d tree beats faiss's brute-force
IndexFlatL2 on our observations (2-d point rows: 0.12 s vs 1.38 s; 6-d grid rows: 0.024 s vs
0.055 s) and loses badly from 16 dimensions on (12000 uniform rows, 20-NN: 5.1 s vs 0.35 s at 16-d,
9.9 s vs 0.48 s at 39-d, Meta-World's size), so `knn_all` picks by dimension. At evaluation the
index holds at most a few hundred demonstration rows and a batch of queries, where faiss takes
under a millisecond at every dimension (k-d tree: 0.2-3 ms), so `Retriever` keeps faiss, as the
official code does.
"""

from __future__ import annotations

import faiss
import numpy as np
from sklearn.neighbors import KDTree

from .data import Demos

KD_TREE_MAX_DIM = 6
"""Largest observation dimension for which the offline retrieval uses a k-d tree."""
NORMALISERS = ("nn1", "context")
"""p95 over 1-NN distances (ours) or over the context's distances to the first retrieved state
(the official statistic)."""


def l2_index(x: np.ndarray) -> faiss.IndexFlatL2:
    index = faiss.IndexFlatL2(x.shape[1])
    index.add(np.ascontiguousarray(x, dtype=np.float32))
    return index


def knn(index: faiss.Index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(distances, indices), both (Q, k), closest first; distances are L2 (not squared)."""
    sq, idx = index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
    return np.sqrt(np.maximum(sq, 0.0)), idx


def brute_force_knn(x: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The obvious reference: all pairwise distances, then a stable sort."""
    d = np.linalg.norm(queries[:, None, :].astype(np.float64) - x[None, :, :], axis=-1)
    idx = np.argsort(d, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(d, idx, axis=1), idx


def knn_all(x: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact (distances, indices) like `knn`, with a k-d tree at low dimension, else faiss."""
    if x.shape[1] <= KD_TREE_MAX_DIM:
        dist, idx = KDTree(np.asarray(x, dtype=np.float64)).query(
            np.asarray(queries, dtype=np.float64), k=k
        )
        return dist.astype(np.float32), idx
    return knn(l2_index(x), queries, k)


def knn_other_episodes(demos: Demos, n: int) -> tuple[np.ndarray, np.ndarray]:
    """For every row, its n nearest rows from *other* episodes (pretraining retrieval; the
    query's own episode is excluded so that the model cannot learn to copy itself)."""
    counts = np.bincount(demos.episode)
    longest = int(counts.max())
    available = len(demos) - longest
    if n > available:
        raise ValueError(
            f"n={n} neighbours requested but only {available} rows lie outside the longest "
            f"episode; collect more demonstrations or lower n"
        )
    k = min(len(demos), n + longest)
    dist, idx = knn_all(demos.obs, demos.obs, k)
    own = demos.episode[idx] == demos.episode[:, None]
    order = np.argsort(own, axis=1, kind="stable")[:, :n]  # other-episode hits keep their order
    return np.take_along_axis(dist, order, axis=1), np.take_along_axis(idx, order, axis=1)


def distances_to_first(ctx_obs: np.ndarray, query: np.ndarray) -> np.ndarray:
    """(B, n + 1) distances of each context state and of the query to the first retrieved state
    (the first is 0). ctx_obs: (B, n, d), query: (B, d)."""
    states = np.concatenate([ctx_obs, query[:, None, :]], axis=1)
    return np.linalg.norm(states - ctx_obs[:, :1, :], axis=-1)


def p95_normaliser(demos: Demos, kind: str = "nn1", n: int = 19) -> float:
    """95th percentile of retrieval distances, the scale REGENT's distances are divided by.

    kind "nn1" (ours): each state's distance to its nearest neighbour in another episode (within
    one episode: its nearest other row). kind "context" (the official statistic): every row is a
    query with its n neighbours from other episodes, and the percentile is over the distances of
    every retrieved state and of the query to the *first* retrieved state, the zeros of the first
    included; i.e. over exactly the distances REGENT's context carries. Falls back to 1 when the
    percentile is 0."""
    if kind not in NORMALISERS:
        raise ValueError(f"normaliser must be one of {NORMALISERS}, got {kind!r}")
    if len(demos) < 2:
        return 1.0
    k = 1 if kind == "nn1" else n
    counts = np.bincount(demos.episode)
    outside = len(demos) - int(counts.max())
    if demos.n_episodes > 1 and outside >= 1:
        dist, idx = knn_other_episodes(demos, min(k, outside))
    else:
        dist, idx = knn_all(demos.obs, demos.obs, min(k, len(demos) - 1) + 1)
        dist, idx = dist[:, 1:], idx[:, 1:]
    if kind == "context":
        dist = distances_to_first(demos.obs[idx], demos.obs)
    value = float(np.percentile(dist, 95))
    return value if value > 0 else 1.0


class Retriever:
    """The demonstrations of one environment, indexed for retrieval at evaluation time."""

    def __init__(self, demos: Demos, normaliser: str = "nn1", n: int = 19):
        if len(demos) == 0:
            raise ValueError("the environment has no demonstrations; give at least one episode")
        self.demos = demos
        self.index = l2_index(demos.obs)
        self.normaliser = p95_normaliser(demos, normaliser, n)

    def retrieve(self, queries: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices (Q, n) of the n nearest demonstration rows, closest first, and distances."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.demos.obs.shape[1]:
            raise ValueError(
                f"observations of shape {queries.shape[1:]} do not match the demonstrations' "
                f"shape {self.demos.obs.shape[1:]}"
            )
        if not 1 <= n <= len(self.demos):
            raise ValueError(
                f"n={n} must be between 1 and the {len(self.demos)} demonstration rows"
            )
        dist, idx = knn(self.index, queries, n)
        return idx, dist

    def rp_action(self, queries: np.ndarray) -> np.ndarray:
        """Retrieve-and-Play: the action stored with the nearest demonstration state."""
        idx, _ = self.retrieve(queries, 1)
        return self.demos.act[idx[:, 0]]
