"""Baselines, evaluated through the same episode code as SmartRAG.

(a) no retrieval: the warm-up policy, `[SEARCH]` masked;
(b) always retrieve with the raw question, the warm-up policy as reader;
(c) SFT-only SmartRAG: the warm-up policy making all three decisions (modules not jointly
    optimised);
(d) modular pipeline: three separately trained modules, a when-to-retrieve classifier (logistic
    regression on the question's words, fitted to the SFT labels), a rewriter optimised on its
    own with retrieval feedback (`train_rewriter`), and the warm-up policy as reader;
plus a floor that needs no model (`majority_floor`: the most common train answer per relation).
"""

from __future__ import annotations

import collections
import copy

import numpy as np
import torch
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression

from .config import Config
from .data import Question
from .env import SEARCH, exact_match, f1_score, parse_action
from .env import prompt as state_text
from .policy import Codec, Policy, generate
from .retrieval import observe
from .rollout import contains_answer
from .warmup import fit_lm


class RetrievalClassifier:
    """When-to-retrieve classifier of the modular pipeline."""

    def __init__(self, questions: list[Question], retrieve: np.ndarray, seed: int):
        self.vec = CountVectorizer(token_pattern=r"\S+")
        x = self.vec.fit_transform([q.text for q in questions])
        labels = np.asarray(retrieve, dtype=int)
        self.constant = None if len(set(labels.tolist())) > 1 else bool(labels[0])
        if self.constant is None:
            self.model = LogisticRegression(C=10.0, max_iter=2000, random_state=seed).fit(x, labels)

    def probability(self, questions: list[Question]) -> np.ndarray:
        """p(retrieve | question); thresholded at tau like the policies' decision score."""
        if self.constant is not None:
            return np.full(len(questions), float(self.constant))
        return self.model.predict_proba(self.vec.transform([q.text for q in questions]))[:, 1]


def rewrite(policy: Policy, codec: Codec, questions: list[Question], cfg: Config,
            generator: torch.Generator | None = None) -> list[str]:  # fmt: skip
    """The query a policy writes after a forced `[SEARCH]` (greedy unless a generator is given)."""
    prompts = codec.encode([state_text(q.text, []) for q in questions])
    n = len(prompts)
    acts = generate(policy, codec, prompts, cfg.max_new, torch.zeros(n, dtype=torch.bool),
                    generator is not None, generator, torch.full((n,), codec.search))  # fmt: skip
    return [parse_action(codec.words(a)).text for a in acts]


def train_rewriter(
    sft: Policy, codec: Codec, retriever, questions: list[Question], cfg: Config
) -> tuple[Policy, float]:
    """The modular pipeline's rewriter, optimised apart from the decision and the reader.

    Retrieval feedback by rejection sampling (expert iteration): sample `rewriter_samples`
    queries per train question from a copy of the warm-up policy, keep the distinct ones whose
    top-k documents contain the answer, fine-tune the copy on those `[SEARCH] q` targets for
    `rewriter_steps` steps. Returns the rewriter and the share of train questions with a kept
    query.
    """
    rewriter = copy.deepcopy(sft)
    gen = torch.Generator().manual_seed(cfg.seed)
    kept: dict[tuple[str, str], None] = {}
    solved = np.zeros(len(questions), bool)
    for _ in range(cfg.rewriter_samples):
        queries = rewrite(rewriter, codec, questions, cfg, gen)
        docs, _ = observe(retriever, [q or "<empty>" for q in queries], cfg.top_k)
        for i, (q, text, doc) in enumerate(zip(questions, queries, docs, strict=True)):
            if text and contains_answer(doc, q.answers):
                p0 = state_text(q.text, [])
                kept[(f"{p0} {SEARCH} {text} <eos>", p0)] = None
                solved[i] = True
    if kept and cfg.rewriter_steps:
        rng = np.random.default_rng(cfg.seed)
        fit_lm(rewriter, codec, list(kept), cfg.rewriter_steps, cfg, rng)
    return rewriter.eval(), float(solved.mean() * 100)


def majority_floor(train: list[Question], test: list[Question]) -> dict[str, float]:
    """EM/F1 (%) of answering every test question with its relation's most common train answer."""
    common: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for q in train:
        common[q.relation][q.answers[0]] += 1
    guess = [common[q.relation].most_common(1)[0][0] if common[q.relation] else "" for q in test]
    return {
        "em": float(np.mean([exact_match(g, q.answers) for g, q in zip(guess, test, strict=True)]))
        * 100,
        "f1": float(np.mean([f1_score(g, q.answers) for g, q in zip(guess, test, strict=True)]))
        * 100,
        "retrieval_rate": 0.0,
    }
