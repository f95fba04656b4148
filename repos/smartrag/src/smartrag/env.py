"""The RAG environment of Algorithm 1: actions, prompts, the quota and the reward.

State s = [x; o_1..o_n] (question plus observations so far). An action is `[SEARCH] query` or
`[ANSWER] text`; a search returns the retriever's top documents as the next observation; once
n = N (the quota) the first token is forced to `[ANSWER]`.
Reward (official `env.py` / `reward.py`): EM + F1 at the end of an answer, -alpha at the end of a
search, -1 for an unparsable first word, 0 for every other token (KL shaping is added in ppo.py).
"""

from __future__ import annotations

import collections
import dataclasses
import re
import string

SEARCH, ANSWER = "[SEARCH]", "[ANSWER]"


def normalize_answer(s: str) -> str:
    """SQuAD v1.1 normalisation: lower case, drop punctuation, articles and extra spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def exact_match(prediction: str, references: tuple[str, ...] | list[str]) -> float:
    """Max over references of normalised string equality (SQuAD EM)."""
    return max(float(normalize_answer(prediction) == normalize_answer(r)) for r in references)


def _f1(prediction: str, reference: str) -> float:
    p, r = normalize_answer(prediction).split(), normalize_answer(reference).split()
    common = collections.Counter(p) & collections.Counter(r)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(r)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, references: tuple[str, ...] | list[str]) -> float:
    """Max over references of the SQuAD token-level F1."""
    return max(_f1(prediction, r) for r in references)


@dataclasses.dataclass(frozen=True)
class Action:
    kind: str
    """"search", "answer" or "malformed"."""
    text: str


def parse_action(tokens: list[str]) -> Action:
    """Split a generated action `a = a_0 a_{1:}` at its first token; stops at <eos>."""
    if "<eos>" in tokens:
        tokens = tokens[: tokens.index("<eos>")]
    if not tokens or tokens[0] not in (SEARCH, ANSWER):
        return Action("malformed", " ".join(tokens))
    body = " ".join(t for t in tokens[1:] if t != "<pad>")
    return Action("search" if tokens[0] == SEARCH else "answer", body)


def action_reward(action: Action, answers: tuple[str, ...], alpha: float) -> float:
    """Terminal reward of one action (placed on its last token)."""
    if action.kind == "malformed":
        return -1.0
    if action.kind == "search":
        return -alpha
    return exact_match(action.text, answers) + f1_score(action.text, answers)


def must_answer(n_searches: int, quota: int) -> bool:
    """Algorithm 1: once the number of retrievals reaches the quota N, a_0 is forced to ANSWER."""
    if quota < 0:
        raise ValueError(f"retrieval quota must be >= 0, got {quota}")
    return n_searches >= quota


def prompt(question: str, observations: list[str]) -> str:
    """The state as text: `Q question [OBS o_1 ... OBS o_n] <sep>`."""
    obs = "".join(f" OBS {o}" for o in observations)
    return f"Q {question}{obs} <sep>"
