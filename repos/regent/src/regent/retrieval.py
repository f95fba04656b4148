"""Retrieval with faiss (exact L2), the p95 distance normaliser and Retrieve-and-Play (R&P).

R&P (Sec. 3 of the paper): the action of the nearest demonstration state, a(s) = a'_1.
REGENT's context: the n nearest demonstration states, closest first.
"""

from __future__ import annotations

import faiss
import numpy as np

from .data import Demos


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
    dist, idx = knn(l2_index(demos.obs), demos.obs, k)
    own = demos.episode[idx] == demos.episode[:, None]
    order = np.argsort(own, axis=1, kind="stable")[:, :n]  # other-episode hits keep their order
    return np.take_along_axis(dist, order, axis=1), np.take_along_axis(idx, order, axis=1)


def p95_normaliser(demos: Demos) -> float:
    """95th percentile of each state's distance to its nearest neighbour in another episode (the
    distribution REGENT's distances are divided by); within one episode: its nearest other row."""
    if len(demos) < 2:
        return 1.0
    if demos.n_episodes > 1:
        dist, _ = knn_other_episodes(demos, 1)
    else:
        dist = knn(l2_index(demos.obs), demos.obs, 2)[0][:, 1:]
    value = float(np.percentile(dist[:, 0], 95))
    return value if value > 0 else 1.0


class Retriever:
    """The demonstrations of one environment, indexed for retrieval at evaluation time."""

    def __init__(self, demos: Demos):
        if len(demos) == 0:
            raise ValueError("the environment has no demonstrations; give at least one episode")
        self.demos = demos
        self.index = l2_index(demos.obs)
        self.normaliser = p95_normaliser(demos)

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
