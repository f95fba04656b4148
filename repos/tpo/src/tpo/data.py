"""Multi-step modular-arithmetic chains, a programmatic judge, and preference trees as JSONL.

A problem is a start value and a list of (operator, operand) steps, everything mod `modulus`:
    prompt    x 7 + 3 * 2 - 4 ?
    solution  S 7 + 3 = 0 S 0 * 2 = 0 S 0 - 4 = 6 A 6          (mod 10)
Every number is one token; "S" marks the start of a step (the paper's "Step k:").
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

SPECIALS = ("<pad>", "<bos>", "<eos>", "x", "?", "S", "=", "A", "+", "-", "*")
OPS = ("+", "-", "*")
STEP = "S"


def vocab(modulus: int) -> list[str]:
    return list(SPECIALS) + [str(i) for i in range(modulus)]


class Tokenizer:
    """Whitespace tokenizer over a fixed vocabulary; unknown tokens are an error, not <unk>."""

    def __init__(self, modulus: int) -> None:
        self.itos = vocab(modulus)
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        self.pad, self.bos, self.eos = (self.stoi[s] for s in ("<pad>", "<bos>", "<eos>"))
        self.step = self.stoi[STEP]

    def encode(self, text: str) -> list[int]:
        ids = []
        for tok in text.split():
            if tok not in self.stoi:
                raise ValueError(f"unknown token {tok!r} in {text!r}; expected one of {self.itos}")
            ids.append(self.stoi[tok])
        return ids

    def encode_prompt(self, prompt: str) -> list[int]:
        return [self.bos] + self.encode(prompt)

    def encode_response(self, response: str | list[str]) -> tuple[list[int], list[int]]:
        """Token ids of the response and <eos>, and the step index of each token ("S" opens a
        step; tokens before the first "S" count as step 0). A list of steps is joined."""
        if not isinstance(response, str):
            response = " ".join(response)
        ids = self.encode(response) + [self.eos]
        steps, k = [], -1
        for t in ids:
            k += t == self.step
            steps.append(max(k, 0))
        return ids, steps

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.itos[i] for i in ids if i not in (self.pad, self.bos, self.eos))


@dataclasses.dataclass(frozen=True)
class Problem:
    start: int
    steps: tuple[tuple[str, int], ...]
    modulus: int

    def values(self) -> list[int]:
        """Running value after each step."""
        out, v = [], self.start
        for op, b in self.steps:
            v = apply(v, op, b, self.modulus)
            out.append(v)
        return out

    def prompt(self) -> str:
        return " ".join(["x", str(self.start)] + [f"{op} {b}" for op, b in self.steps] + ["?"])


def apply(a: int, op: str, b: int, modulus: int) -> int:
    if op == "+":
        return (a + b) % modulus
    if op == "-":
        return (a - b) % modulus
    return (a * b) % modulus


def random_problem(rng: np.random.Generator, n_steps: int, modulus: int) -> Problem:
    steps = tuple((OPS[rng.integers(3)], int(rng.integers(modulus))) for _ in range(n_steps))
    return Problem(int(rng.integers(modulus)), steps, modulus)


def parse_prompt(prompt: str, modulus: int) -> Problem:
    toks = prompt.split()
    if len(toks) < 5 or toks[0] != "x" or toks[-1] != "?" or len(toks) % 2 != 1:
        raise ValueError(f"prompt {prompt!r} is not of the form 'x A op B ... ?'")
    body = toks[2:-1]
    steps = tuple((body[i], int(body[i + 1])) for i in range(0, len(body), 2))
    if any(op not in OPS for op, _ in steps):
        raise ValueError(f"prompt {prompt!r} uses an operator outside {OPS}")
    return Problem(int(toks[1]), steps, modulus)


def solution(p: Problem, corrupt_at: int | None = None, wrong_value: int = 0) -> str:
    """Step-by-step solution; with corrupt_at=k, step k writes wrong_value and later steps
    continue correctly from it (the error propagates, as in Step-DPO's wrong trajectories)."""
    parts, v = [], p.start
    for k, (op, b) in enumerate(p.steps):
        new = apply(v, op, b, p.modulus) if k != corrupt_at else wrong_value
        parts.append(f"{STEP} {v} {op} {b} = {new}")
        v = new
    return " ".join(parts + [f"A {v}"])


def slipped_solution(p: Problem) -> str:
    """The solution with a systematic slip: every multiplication by a large factor, 'v * b' with
    2b > m, is skipped (the step writes v), and later steps continue from it. Unlike
    wrong_solution's random wrong value, the same slip on the same kind of step can become the
    SFT policy's greedy choice."""
    parts, v = [], p.start
    for op, b in p.steps:
        new = v if (op == "*" and 2 * b > p.modulus) else apply(v, op, b, p.modulus)
        parts.append(f"{STEP} {v} {op} {b} = {new}")
        v = new
    return " ".join(parts + [f"A {v}"])


def wrong_solution(p: Problem, rng: np.random.Generator) -> tuple[str, int]:
    """A solution with one wrong step k (a random wrong value) and the index k."""
    k = int(rng.integers(len(p.steps)))
    right = p.values()[k]
    wrong = int((right + 1 + rng.integers(p.modulus - 1)) % p.modulus)
    return solution(p, corrupt_at=k, wrong_value=wrong), k


def split_steps(response: str) -> tuple[list[list[str]], str | None]:
    """Steps (token lists after each "S") and the answer token after "A" (None if missing)."""
    toks = response.split()
    answer = None
    if "A" in toks:
        i = toks.index("A")
        answer = toks[i + 1] if i + 1 < len(toks) else None
        toks = toks[:i]
    steps, cur = [], None
    for t in toks:
        if t == STEP:
            cur = []
            steps.append(cur)
        elif cur is not None:
            cur.append(t)
    return steps, answer


def judge(p: Problem, response: str) -> float:
    """Programmatic scorer in [-100, 100] replacing the paper's LLM judge.
    Correct answer: 100 - 10 * (wrong steps). Wrong answer: -100 + 150 * (first error) / T.
    A step is wrong when it is malformed, copies the problem wrongly, does not continue from the
    previous result, or computes a wrong result from what it wrote."""
    steps, answer = split_steps(response)
    n = len(p.steps)
    wrong, prev = [], str(p.start)
    for k in range(max(n, len(steps))):
        ok = k < n and k < len(steps) and len(steps[k]) == 5 and steps[k][3] == "="
        if ok:
            a, op, b, _, res = steps[k]
            nums = all(s.isdigit() for s in (a, b, res))
            ok = nums and a == prev and (op, int(b)) == p.steps[k]
            ok = ok and int(res) == apply(int(a), op, int(b), p.modulus)
            prev = res if nums else prev
        wrong.append(not ok)
    correct = answer is not None and answer == str(p.values()[-1])
    if correct:
        return float(100 - 10 * sum(wrong))
    first = wrong.index(True) if any(wrong) else n
    return -100.0 + 150.0 * min(first, n) / n


@dataclasses.dataclass
class Tree:
    """One preference tree flattened to a list: the prompt, N responses and their scores.
    prefix_steps[i] is how many gold steps response i starts with (siblings share a prefix)."""

    prompt: str
    responses: list[str]
    scores: list[float]
    prefix_steps: list[int] | None = None
    steps: list[list[str]] | None = None
    """Each response's steps as given (the official format); None: split at the step marker."""

    def response_units(self) -> list[str] | list[list[str]]:
        """What the tokenizer encodes per response: its step list when given, else its text."""
        return self.steps if self.steps is not None else self.responses


def _type_problem(tree: Tree) -> str | None:
    """What is of the wrong JSON type in a tree read from a file (None: nothing)."""
    if not isinstance(tree.prompt, str):
        return f"prompt must be a string, got {tree.prompt!r}"
    if not isinstance(tree.responses, list) or not all(isinstance(r, str) for r in tree.responses):
        return "responses must be a list of strings"
    if not isinstance(tree.scores, list):
        return f"scores must be a list of numbers, got {tree.scores!r}"
    return None


def has_step_marker(response: str) -> bool:
    return STEP in response.split()


def validate_tree(
    tree: Tree, where: str = "tree", has_step: Callable[[str], bool] = has_step_marker
) -> Tree:
    problem = _type_problem(tree)
    if problem:
        raise ValueError(f"{where}: {problem}")
    if len(tree.responses) < 2:
        raise ValueError(
            f"{where}: a preference tree needs >= 2 responses, got {len(tree.responses)}"
        )
    if len(tree.scores) != len(tree.responses):
        raise ValueError(
            f"{where}: {len(tree.scores)} scores for {len(tree.responses)} responses; expected one each"
        )
    for i, s in enumerate(tree.scores):
        if not isinstance(s, int | float) or not math.isfinite(s):
            raise ValueError(f"{where}: score {i} is {s!r}; expected a finite number")
    if tree.steps is not None:
        return tree  # the file gave the steps (official format): no marker needed
    for i, r in enumerate(tree.responses):
        if not has_step(r):
            raise ValueError(
                f"{where}: response {i} {r[:40]!r} has no step marker ({STEP!r}, or "
                "--step-pattern with --model-dir); ASR needs responses split into steps"
            )
    return tree


def save_trees(path: str | Path, trees: list[Tree]) -> None:
    lines = [json.dumps(dataclasses.asdict(t)) for t in trees]
    Path(path).write_text("\n".join(lines) + "\n")


RESPONSE_TEMPLATE = "{prompt}\n\n### Response:\n"
"""The official TPODataset's prompt template (dataset.py); the response's steps follow it."""


def official_tree(obj: dict, where: str) -> Tree:
    """A tree in the official data format (data_prepare.py / dataset.py):
    {"prompt": str, "response_list": [{"response": [step, ...], "score": v}, ...]}, the gold
    solution first. Steps are kept as given (one step index each); responses are their
    concatenation, and the prompt gets the official '### Response:' template."""
    if not isinstance(obj.get("prompt"), str):
        raise ValueError(f"{where}: prompt must be a string, got {obj.get('prompt')!r}")  # noqa: TRY004
    items = obj["response_list"]
    if not isinstance(items, list):
        kind = type(items).__name__
        raise ValueError(f"{where}: response_list must be a list, got {kind}")  # noqa: TRY004
    steps, scores = [], []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not {"response", "score"} <= set(item):
            raise ValueError(f"{where}: response_list[{i}] must hold 'response' and 'score'")
        resp = item["response"]
        if isinstance(resp, str):
            resp = [resp]
        if not resp or not all(isinstance(x, str) and x for x in resp):
            raise ValueError(
                f"{where}: response_list[{i}].response must be a non-empty list of non-empty "
                "step strings"
            )
        steps.append(list(resp))
        scores.append(item["score"])
    prompt = RESPONSE_TEMPLATE.format(prompt=obj["prompt"])
    shared = [shared_prefix(steps[0], x) for x in steps]  # gold steps each response starts with
    return Tree(prompt, ["".join(x) for x in steps], scores, shared, steps)


def shared_prefix(gold: list[str], steps: list[str]) -> int:
    """How many leading steps `steps` has in common with `gold`."""
    n = 0
    while n < min(len(gold), len(steps)) and gold[n] == steps[n]:
        n += 1
    return n


def load_trees(path: str | Path, has_step: Callable[[str], bool] = has_step_marker) -> list[Tree]:
    """Read JSONL trees ({"prompt", "responses", "scores"[, "prefix_steps"]} per line)."""
    trees = []
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the trees file ({exc})") from None
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{path}:{n}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        kind = type(obj).__name__
        if kind != "dict":
            raise ValueError(f"{path}:{n}: expected a JSON object, got {kind}")
        if "response_list" in obj:
            tree = official_tree(obj, f"{path}:{n}")
        else:
            missing = {"prompt", "responses", "scores"} - set(obj)
            if missing:
                raise ValueError(
                    f"{path}:{n}: missing keys {sorted(missing)} (or give the official "
                    "format's 'prompt' and 'response_list')"
                )
            tree = Tree(obj["prompt"], obj["responses"], obj["scores"], obj.get("prefix_steps"))
        trees.append(validate_tree(tree, f"{path}:{n}", has_step))
    if not trees:
        raise ValueError(f"{path}: no preference trees found")
    return trees
