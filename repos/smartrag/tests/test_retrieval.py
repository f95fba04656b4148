"""Retrievers: BM25 finds the planted document, faiss equals brute force, bad corpora fail."""

from __future__ import annotations

import numpy as np
import pytest

from smartrag.data import make_world
from smartrag.retrieval import (
    BM25Retriever,
    DenseRetriever,
    brute_force_top_k,
    faiss_top_k,
    make_retriever,
    observe,
)


def test_bm25_top1_finds_the_planted_document_for_rewritten_queries():
    world = make_world(60, 5, 30, 0.3, 1.0, seed=0)
    bm25 = BM25Retriever(world.documents)
    questions = world.questions
    top = bm25.search([q.rewrite for q in questions], k=1)
    hits = [world.documents[t[0]].endswith(q.answers[0]) and world.names[q.entity] in
            world.documents[t[0]] for q, t in zip(questions, top, strict=True)]  # fmt: skip
    assert all(hits)
    # the raw question (alias, not the name) rarely finds it: rewriting has work to do
    raw, _ = observe(bm25, [q.text for q in questions], 1)
    raw_hits = np.mean([world.names[q.entity] in d for q, d in zip(questions, raw, strict=True)])
    assert raw_hits < 0.2


def test_faiss_equals_brute_force():
    rng = np.random.default_rng(0)
    corpus = rng.normal(size=(200, 16)).astype(np.float32)
    queries = rng.normal(size=(9, 16)).astype(np.float32)
    assert np.array_equal(faiss_top_k(corpus, queries, 5), brute_force_top_k(corpus, queries, 5))


class _HashEncoder:
    """A stand-in sentence encoder: bag of hashed words (keeps the unit test model-free)."""

    def encode(self, texts, **_):
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.split():
                out[i, sum(map(ord, w)) % 64] += 1
        return out / np.linalg.norm(out, axis=1, keepdims=True).clip(1e-9)


def test_dense_retriever_with_injected_encoder():
    docs = ["alpha beta", "gamma delta", "epsilon zeta"]
    dense = DenseRetriever(docs, encoder=_HashEncoder())
    assert dense.search(["gamma delta"], k=1) == [[1]]


@pytest.mark.parametrize("kind", ["bm25", "dense"])
def test_empty_corpus_is_a_clear_error(kind):
    with pytest.raises(ValueError, match="retrieval corpus is empty"):
        make_retriever(kind, ["", "  "])


def test_unknown_retriever_is_a_clear_error():
    with pytest.raises(ValueError, match="retriever must be 'bm25' or 'dense', got 'bing'"):
        make_retriever("bing", ["a"])


def test_minilm_dense_retriever_finds_a_paraphrase():
    docs = ["the cat sat on the mat", "stock markets fell sharply today", "a recipe for pancakes"]
    dense = make_retriever("dense", docs)
    assert dense.search(["how to make pancakes"], k=1) == [[2]]


def test_encoder_folder_given_by_path(tmp_path):
    """`--encoder FOLDER`: any local sentence-transformers folder (here the wheel's MiniLM saved
    to disk) gives the same embeddings; a missing folder is a clear error."""
    from smartrag.retrieval import load_encoder

    default = load_encoder()
    default.save(str(tmp_path / "minilm"))
    docs = ["the cat sat on the mat", "a recipe for pancakes"]
    by_path = make_retriever("dense", docs, encoder_path=str(tmp_path / "minilm"))
    assert np.allclose(by_path.embed(docs), DenseRetriever(docs, encoder=default).embed(docs))
    with pytest.raises(ValueError, match="encoder folder .* does not exist"):
        load_encoder(path=str(tmp_path / "nope"))
