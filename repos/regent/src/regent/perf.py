"""Speed figures: exact k-nearest-neighbour search with faiss against scikit-learn and numpy on
the pretraining dataset of a family (every row queried, as in the offline retrieval)."""

from __future__ import annotations

import time

import numpy as np
from sklearn.neighbors import NearestNeighbors

from .retrieval import KD_TREE_MAX_DIM, knn, l2_index


def numpy_knn(x: np.ndarray, queries: np.ndarray, k: int, chunk: int = 512) -> np.ndarray:
    """Chunked brute force with argpartition (indices only, closest first)."""
    sq = (x.astype(np.float32) ** 2).sum(1)
    out = []
    for start in range(0, len(queries), chunk):
        q = queries[start : start + chunk].astype(np.float32)
        d2 = (q**2).sum(1)[:, None] - 2.0 * q @ x.T + sq[None, :]
        part = np.argpartition(d2, k, axis=1)[:, :k]
        order = np.argsort(np.take_along_axis(d2, part, 1), axis=1)
        out.append(np.take_along_axis(part, order, 1))
    return np.concatenate(out)


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def knn_performance(x: np.ndarray, k: int, family: str) -> list[dict]:
    """faiss IndexFlatL2 vs sklearn NearestNeighbors (auto: a k-d tree at this dimension) and
    numpy brute force; all rows as queries. Also reports the worst distance disagreement."""
    t_faiss, (dist, _) = timed(lambda: knn(l2_index(x), x, k))
    t_sk, (dist_sk, _) = timed(lambda: NearestNeighbors(n_neighbors=k).fit(x).kneighbors(x))
    t_np, _ = timed(lambda: numpy_knn(x, x, k))
    gap = float(np.abs(dist - dist_sk).max())
    what = f"exact {k}-NN of all {len(x)} pretraining rows ({x.shape[1]}-d), {family} family"
    return [
        {
            "id": f"knn-{family}-sklearn",
            "what": what,
            "ours_s": t_faiss,
            "peer": "sklearn NearestNeighbors",
            "peer_s": t_sk,
            "ratio": t_sk / t_faiss,
            "max_distance_gap": gap,
        },
        {
            "id": f"knn-{family}-numpy",
            "what": what,
            "ours_s": t_faiss,
            "peer": "numpy brute force",
            "peer_s": t_np,
            "ratio": t_np / t_faiss,
        },
    ]


def knn_by_dimension(
    dims: tuple[int, ...], n_rows: int, k: int, seed: int = 0
) -> tuple[list[dict], dict[int, tuple[float, float]]]:
    """faiss IndexFlatL2 vs scikit-learn's k-d tree for the all-rows k-NN of n_rows uniform
    points at each dimension (the choice `retrieval.knn_all` makes by dimension)."""
    rng = np.random.default_rng(seed)
    rows, times = [], {}
    for d in dims:
        x = rng.random((n_rows, d), dtype=np.float32)
        t_faiss, _ = timed(lambda x=x: knn(l2_index(x), x, k))
        t_tree, _ = timed(
            lambda x=x: NearestNeighbors(n_neighbors=k, algorithm="kd_tree").fit(x).kneighbors(x)
        )
        times[d] = (t_faiss, t_tree)
        rows.append(
            {
                "id": f"knn-dim{d}-kdtree",
                "what": f"exact {k}-NN of {n_rows} uniform {d}-d rows, all rows as queries "
                f"(knn_all uses {'the k-d tree' if d <= KD_TREE_MAX_DIM else 'faiss'} here)",
                "ours_s": t_faiss,
                "peer": "sklearn k-d tree",
                "peer_s": t_tree,
                "ratio": t_tree / t_faiss,
            }
        )
    return rows, times
