"""What each command of the generated cli.py runs: this project's wiring."""

from __future__ import annotations

from .commands import standard
from .config import Config
from .runtime import Command


def score_data(cfg: Config) -> dict[str, float]:
    """Load both files up front (one-line errors), then the answer hit rate of the raw questions'
    top-k documents: the always-retrieve, no-rewrite floor on the user's data."""
    from .data import load_corpus_jsonl, load_questions_jsonl
    from .retrieval import make_retriever, observe
    from .rollout import contains_answer

    if not cfg.questions or not cfg.corpus:
        raise ValueError("data needs --questions FILE and --corpus FILE (JSONL)")
    questions, docs = load_questions_jsonl(cfg.questions), load_corpus_jsonl(cfg.corpus)
    retriever = make_retriever(cfg.retriever, docs, cfg.device, cfg.encoder)
    texts, _ = observe(retriever, [q.text for q in questions], cfg.top_k)
    hits = [contains_answer(t, q.answers) for t, q in zip(texts, questions, strict=True)]
    return {
        "questions": len(questions),
        "documents": len(docs),
        f"raw_query_hit_rate@{cfg.top_k}": 100.0 * sum(hits) / len(hits),
    }


COMMANDS = standard(
    train="warm up, train SmartRAG with PPO and evaluate every method for one seed into --out",
    eval="reload the checkpoints in --out and evaluate every method again on the held-out questions",
)
COMMANDS["data"] = Command(
    "validate --questions/--corpus JSONL files and score raw-question retrieval on them",
    score_data,
)
