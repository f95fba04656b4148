"""Evaluation on the held-out questions: SmartRAG, the baselines, an oracle, a floor and the
negative controls the claims are checked against (CONVENTIONS section 8).

Every method that decides when to retrieve is scored under two protocols. Primary, the paper's
(Section 3.3 / `evaluate_retrieval_t5.py`): retrieve when the decision score exceeds the fixed
tau = 0.5 (`--tau`). Second, rows `<method>_tuned`: tau picked from `TAUS` on the validation
split by the paper's reward, EM + F1 - alpha x retrieval rate, the same budget for every method.

Greedy episodes are independent per question, so each (reader, queries) pair is played twice,
once with every first decision forced to `[SEARCH]` and once to `[ANSWER]`; the outcome of any
decision vector (any tau, the oracle's) is then a per-question selection (`Branches.select`).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from .baselines import RetrievalClassifier, majority_floor, rewrite
from .config import Config
from .data import Question, World
from .env import prompt as state_text
from .policy import Codec, Policy
from .rollout import Outcome, run_episodes, search_probability, summarize_outcomes

TAUS = (0.1, 0.3, 0.5, 0.7, 0.9)
"""The tuning grid of the decision threshold, shared by every method that decides."""


def decision_scores(policy: Policy, codec: Codec, questions: list[Question], cfg: Config):
    """The policy's score for `[SEARCH]` at a_0 of every question (rule `cfg.decision`)."""
    prompts = codec.encode([state_text(q.text, []) for q in questions])
    return search_probability(policy, codec, prompts, cfg.decision)


def episodes(
    policy: Policy, codec: Codec, retriever, questions: list[Question], cfg: Config,
    decide: np.ndarray, queries: list[str] | None = None, shuffle_seed: int | None = None,
) -> tuple[dict[str, float], list[Outcome]]:  # fmt: skip
    """Greedy episodes with the first decision given; metrics and per-question outcomes."""
    policy.eval()
    shuffle = None if shuffle_seed is None else np.random.default_rng(shuffle_seed)
    _, out = run_episodes(
        policy, codec, retriever, questions, quota=cfg.quota, top_k=cfg.top_k, alpha=cfg.alpha,
        max_new=cfg.max_new, sample=False, decide=decide, queries=queries, shuffle_docs=shuffle,
    )  # fmt: skip
    return summarize_outcomes(questions, out), out


@dataclasses.dataclass
class Branches:
    """Per-question outcomes of one reader when it searches first and when it answers first."""

    questions: list[Question]
    search: list[Outcome]
    answer: list[Outcome]

    @classmethod
    def play(cls, reader: Policy, codec: Codec, retriever, questions: list[Question],
             cfg: Config, queries: list[str] | None = None,
             answer: list[Outcome] | None = None) -> Branches:  # fmt: skip
        """`answer`: the reader's closed-book outcomes when already played (queries don't
        change them)."""
        n = len(questions)
        _, s = episodes(reader, codec, retriever, questions, cfg, np.ones(n, bool), queries)
        if answer is None:
            _, answer = episodes(reader, codec, retriever, questions, cfg, np.zeros(n, bool))
        return cls(questions, s, answer)

    def select(self, decide: np.ndarray) -> tuple[dict[str, float], list[Outcome]]:
        out = [s if d else a for s, a, d in zip(self.search, self.answer, decide, strict=True)]
        return summarize_outcomes(self.questions, out), out


def selection_reward(metrics: dict[str, float], alpha: float) -> float:
    """The paper's per-question reward in %: EM + F1 - alpha x retrieval (what tau is tuned on)."""
    return metrics["em"] + metrics["f1"] - alpha * metrics["retrieval_rate"]


def tuned(
    val: Branches, test: Branches, score_val: np.ndarray, score_test: np.ndarray,
    tau: float = 0.5, alpha: float = 0.0,
) -> tuple[dict[str, float], list[Outcome], dict[str, float]]:  # fmt: skip
    """Both protocols on test. Primary (the paper's): retrieve where the score exceeds the fixed
    `tau`; with the tau curve over TAUS. Second: tau picked in TAUS by the paper's reward on
    validation (`selection_reward`, ties: the larger tau, fewer retrievals), then applied to
    test. Returns (fixed-tau metrics, their outcomes, validation-tuned metrics)."""
    metrics, out = test.select(score_test > tau)
    metrics.update(tau=tau)
    for t in TAUS:
        m, _ = test.select(score_test > t)
        metrics.update({f"em@tau{t}": m["em"], f"retrieval_rate@tau{t}": m["retrieval_rate"]})
    best = max(TAUS, key=lambda t: (selection_reward(val.select(score_val > t)[0], alpha), t))
    on_val, _ = test.select(score_test > best)
    on_val.update(tau=best)
    return metrics, out, on_val


def head_tail_shuffled(questions: list[Question], out: list[Outcome], seed: int) -> dict:
    """Negative control of the head/tail claim: retrieval rates under permuted head labels."""
    head = np.random.default_rng(seed).permutation([q.head for q in questions])
    if head.all() or not head.any():
        return {}
    searched = np.array([o.searches > 0 for o in out])
    return {
        "retrieval_rate_head_shuffled_labels": float(searched[head].mean() * 100),
        "retrieval_rate_tail_shuffled_labels": float(searched[~head].mean() * 100),
    }


class PolicyRows(NamedTuple):
    """A deciding policy's test rows under both protocols, with their per-question outcomes."""

    fixed: dict[str, float]
    """Test metrics at the fixed tau (with the tau curve, the shuffled head/tail labels and
    `query_hit_rate`, the answer hit rate with a search forced on every test question)."""
    out: list[Outcome]
    branches: list[Branches]
    """Validation and test branches."""
    tuned: dict[str, float]
    """Test metrics at the validation-tuned tau (with the shuffled head/tail labels)."""
    tuned_out: list[Outcome]


def evaluate_policy(
    policy: Policy, codec: Codec, retriever, world: World, cfg: Config
) -> PolicyRows:
    """A policy deciding by its own `[SEARCH]` score, on the test split under both protocols."""
    val = Branches.play(policy, codec, retriever, world.val, cfg)
    test = Branches.play(policy, codec, retriever, world.test, cfg)
    scores = [decision_scores(policy, codec, qs, cfg) for qs in (world.val, world.test)]
    metrics, out, on_val = tuned(val, test, *scores, cfg.tau, cfg.alpha)
    _, on_val_out = test.select(scores[1] > on_val["tau"])
    metrics.update(head_tail_shuffled(world.test, out, cfg.seed))
    on_val.update(head_tail_shuffled(world.test, on_val_out, cfg.seed))
    # The queries' quality whatever the decision: hit rate with a search on every test question.
    metrics["query_hit_rate"] = on_val["query_hit_rate"] = float(
        np.mean([o.hit for o in test.search]) * 100
    )
    return PolicyRows(metrics, out, [val, test], on_val, on_val_out)


def rewrite_control_rows(
    world: World, codec: Codec, retriever, cfg: Config, sft: Policy, policy: Policy
) -> dict[str, dict[str, float]]:
    """The p_rewrite = 0 control of rewriter-finds-answers: its warm-up policy (`sft`, no gold
    rewrite among the SFT search targets) and its PPO policy, both protocols."""
    res = {}
    for name, pol in (("sft_only_no_rewrite", sft), ("smartrag_no_rewrite", policy)):
        rows = evaluate_policy(pol, codec, retriever, world, cfg)
        res[name], res[f"{name}_tuned"] = rows.fixed, rows.tuned
    return res


def evaluate_all(
    world: World, codec: Codec, retriever, cfg: Config, sft: Policy, policy: Policy,
    rewriter: Policy, clf: RetrievalClassifier,
) -> dict[str, dict[str, float]]:  # fmt: skip
    """Every row of the results table for one seed (metrics in %, see `summarize_outcomes`)."""
    test, val = world.test, world.val
    n = len(test)
    res: dict[str, dict[str, float]] = {"majority": majority_floor(world.train, test)}
    base = evaluate_policy(sft, codec, retriever, world, cfg)
    res["sft_only"], res["sft_only_tuned"] = base.fixed, base.tuned
    res["no_retrieval"], _ = base.branches[1].select(np.zeros(n, bool))
    closed = [b.answer for b in base.branches]  # the SFT reader's closed-book outcomes
    raw = [Branches.play(sft, codec, retriever, qs, cfg, [q.text for q in qs], a)
           for qs, a in zip((val, test), closed, strict=True)]  # fmt: skip
    res["always_raw"], _ = raw[1].select(np.ones(n, bool))
    p_clf = clf.probability(val), clf.probability(test)
    res["modular_raw_query"], _, res["modular_raw_query_tuned"] = tuned(
        *raw, *p_clf, cfg.tau, cfg.alpha
    )
    mod = [Branches.play(sft, codec, retriever, qs, cfg, rewrite(rewriter, codec, qs, cfg), a)
           for qs, a in zip((val, test), closed, strict=True)]  # fmt: skip
    res["modular"], _, res["modular_tuned"] = tuned(*mod, *p_clf, cfg.tau, cfg.alpha)
    rl = evaluate_policy(policy, codec, retriever, world, cfg)
    res["smartrag"], res["smartrag_tuned"] = rl.fixed, rl.tuned
    # Negative control: SmartRAG's own decisions (at the fixed and at the tuned tau) and queries,
    # but each search gets the documents of another question's search.
    for suffix, out in (("", rl.out), ("_tuned", rl.tuned_out)):
        decide = np.array([o.searches > 0 for o in out])
        res[f"smartrag_shuffled_docs{suffix}"], _ = episodes(
            policy, codec, retriever, test, cfg, decide, shuffle_seed=cfg.seed
        )
    # Oracle: retrieve exactly where SmartRAG's closed-book answer is wrong, with the gold query.
    need = np.array([o.em == 0 for o in rl.branches[1].answer])
    res["oracle"], _ = episodes(
        policy, codec, retriever, test, cfg, need, [q.rewrite for q in test]
    )
    return res
