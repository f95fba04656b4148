"""Baselines, evaluated through the same episode code as SmartRAG.

(a) no retrieval: the warm-up policy, `[SEARCH]` masked;
(b) always retrieve with the raw question, the warm-up policy as reader;
(c) SFT-only SmartRAG: the warm-up policy making all three decisions (modules not jointly
    optimised);
(d) modular pipeline: a separately trained when-to-retrieve classifier (logistic regression on
    the question's words, fitted to the SFT labels), the raw question as query, the warm-up
    policy as reader.
"""

from __future__ import annotations

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression

from .data import Question


class RetrievalClassifier:
    """When-to-retrieve classifier of the modular pipeline."""

    def __init__(self, questions: list[Question], retrieve: np.ndarray, seed: int):
        self.vec = CountVectorizer(token_pattern=r"\S+")
        x = self.vec.fit_transform([q.text for q in questions])
        labels = np.asarray(retrieve, dtype=int)
        self.constant = None if len(set(labels.tolist())) > 1 else bool(labels[0])
        if self.constant is None:
            self.model = LogisticRegression(C=10.0, max_iter=2000, random_state=seed).fit(x, labels)

    def predict(self, questions: list[Question]) -> np.ndarray:
        if self.constant is not None:
            return np.full(len(questions), self.constant)
        return self.model.predict(self.vec.transform([q.text for q in questions])).astype(bool)
