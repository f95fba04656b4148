"""Multi-turn episodes of Algorithm 1 for a batch of questions (used by PPO and by evaluation).

Each episode: the policy acts on s = [x]; on `[SEARCH] q` the retriever's top-k documents are
appended as an observation and the policy acts again; the quota N forces `[ANSWER]` once n = N.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from .data import Question
from .env import action_reward, exact_match, f1_score, must_answer, normalize_answer, parse_action
from .env import prompt as state_text
from .policy import Codec, Policy, generate
from .retrieval import observe


@dataclasses.dataclass
class Turn:
    episode: int
    prompt: list[int]
    action: list[int]
    force_answer: bool
    reward: float
    """Terminal reward of this action, placed on its last token."""


@dataclasses.dataclass
class Outcome:
    answer: str = ""
    em: float = 0.0
    f1: float = 0.0
    searches: int = 0
    hit: bool = False
    """Some retrieved document contains a reference answer."""
    malformed: bool = False
    queries: list[str] = dataclasses.field(default_factory=list)


def contains_answer(text: str, answers: tuple[str, ...]) -> bool:
    padded = f" {normalize_answer(text)} "
    return any(f" {normalize_answer(a)} " in padded for a in answers)


def search_probability(
    policy: Policy, codec: Codec, prompts: list[list[int]], rule: str = "full"
) -> np.ndarray:
    """The inference rule's decision score at a_0.

    `full`: p([SEARCH]) under the full-vocabulary softmax, as the official
    `evaluate_retrieval_t5.py`; `pair`: p([SEARCH]) / (p([SEARCH]) + p([ANSWER])).
    """
    ids, mask = codec.left_pad(prompts)
    with torch.no_grad():
        logits = policy(ids, mask)[0][:, -1].float()
    if rule == "full":
        return torch.softmax(logits, -1)[:, codec.search].numpy()
    if rule == "pair":
        return torch.softmax(logits[:, [codec.search, codec.answer]], -1)[:, 0].numpy()
    raise ValueError(f"decision rule must be 'full' or 'pair', got {rule!r}")


def run_episodes(
    policy: Policy,
    codec: Codec,
    retriever,
    questions: list[Question],
    *,
    quota: int,
    top_k: int,
    alpha: float,
    max_new: int,
    sample: bool,
    generator: torch.Generator | None = None,
    decide: np.ndarray | None = None,
    queries: list[str] | None = None,
    shuffle_docs: np.random.Generator | None = None,
) -> tuple[list[Turn], list[Outcome]]:
    """Play one episode per question.

    `decide` (bool per question) overrides the first decision (baselines and the tau rule);
    `queries` (one per question) replaces the generated query (the raw question for the
    no-rewrite baselines, a separate rewriter's output, the gold rewrite for the oracle);
    `shuffle_docs` (a negative control) hands each search the observation of another, random
    search of the batch.
    """
    must_answer(0, quota)  # validates the quota
    obs: list[list[str]] = [[] for _ in questions]
    out = [Outcome() for _ in questions]
    turns: list[Turn] = []
    active = list(range(len(questions)))
    for turn in range(quota + 1):
        if not active:
            break
        prompts = codec.encode([state_text(questions[i].text, obs[i]) for i in active])
        force = torch.tensor([must_answer(out[i].searches, quota) for i in active])
        first = None
        if turn == 0 and decide is not None:
            wanted = torch.tensor([codec.search if decide[i] else codec.answer for i in active])
            first = torch.where(force, torch.full_like(wanted, codec.answer), wanted)
        actions = generate(policy, codec, prompts, max_new, force, sample, generator, first)
        searching, sent = [], []
        for i, p, a, f in zip(active, prompts, actions, force.tolist(), strict=True):
            act = parse_action(codec.words(a))
            q = questions[i]
            turns.append(Turn(i, p, a, f, action_reward(act, q.answers, alpha)))
            if act.kind == "search":
                out[i].searches += 1
                searching.append(i)
                sent.append(act.text if queries is None else queries[i])
                out[i].queries.append(sent[-1])
            elif act.kind == "answer":
                out[i].answer = act.text
                out[i].em, out[i].f1 = (
                    exact_match(act.text, q.answers),
                    f1_score(act.text, q.answers),
                )
            else:
                out[i].malformed = True
        if searching:
            texts, _ = observe(retriever, sent, top_k)
            if shuffle_docs is not None:
                texts = [texts[j] for j in shuffle_docs.permutation(len(texts))]
            for i, text in zip(searching, texts, strict=True):
                obs[i].append(text)
                out[i].hit |= contains_answer(text, questions[i].answers)
        active = searching
    return turns, out


def summarize_outcomes(questions: list[Question], out: list[Outcome]) -> dict[str, float]:
    """EM/F1 (in %), retrieval rate overall/head/tail, and the answer hit rate of retrievals."""
    em = np.array([o.em for o in out]) * 100
    f1 = np.array([o.f1 for o in out]) * 100
    searched = np.array([o.searches > 0 for o in out])
    head = np.array([q.head for q in questions])
    hits = np.array([o.hit for o in out])
    metrics = {
        "em": float(em.mean()),
        "f1": float(f1.mean()),
        "retrieval_rate": float(searched.mean() * 100),
        "hit_rate": float(hits[searched].mean() * 100) if searched.any() else 0.0,
        "malformed_rate": float(np.mean([o.malformed for o in out]) * 100),
    }
    for name, sel in (("head", head), ("tail", ~head)):
        if sel.any():
            metrics[f"retrieval_rate_{name}"] = float(searched[sel].mean() * 100)
            metrics[f"em_{name}"] = float(em[sel].mean())
    return metrics
