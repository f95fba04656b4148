"""Arithmetic prompts `BOS op1 OP op2 =` with the paper's legality rules (prompt_generation.py).

Every number below `n_numbers` is one token, so a prompt is legal when its result is a single
token: the result lies in [0, n_numbers), subtraction is non-negative, division is integer
division with a non-zero divisor.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from .config import OPERATORS


@dataclasses.dataclass(frozen=True)
class Vocab:
    """Token ids: numbers 0..n_numbers-1, then the four operators, '=' and BOS."""

    n_numbers: int

    def op(self, operator: str) -> int:
        check_operator(operator)
        return self.n_numbers + OPERATORS.index(operator)

    @property
    def eq(self) -> int:
        return self.n_numbers + len(OPERATORS)

    @property
    def bos(self) -> int:
        return self.n_numbers + len(OPERATORS) + 1

    @property
    def size(self) -> int:
        return self.n_numbers + len(OPERATORS) + 2


def check_operator(operator: str) -> None:
    if operator not in OPERATORS:
        raise ValueError(f"unknown operator {operator!r}; expected one of {OPERATORS}")


def apply(operator: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The true result (integer division for '/'); -1 where the operation is undefined."""
    check_operator(operator)
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if operator == "+":
        return a + b
    if operator == "-":
        return a - b
    if operator == "*":
        return a * b
    return np.where(b > 0, a // np.maximum(b, 1), -1)


def legal_grid(operator: str, max_operand: int, n_numbers: int) -> np.ndarray:
    """Boolean [max_operand, max_operand] map of legal (op1, op2) pairs."""
    a, b = np.meshgrid(np.arange(max_operand), np.arange(max_operand), indexing="ij")
    r = apply(operator, a, b)
    return (r >= 0) & (r < n_numbers)


@dataclasses.dataclass(frozen=True)
class Prompts:
    """A batch of prompts of one or more operators, as aligned arrays."""

    op1: np.ndarray
    op2: np.ndarray
    ops: np.ndarray  # operator index into OPERATORS
    result: np.ndarray

    def __len__(self) -> int:
        return len(self.op1)

    def subset(self, idx: np.ndarray) -> Prompts:
        return Prompts(self.op1[idx], self.op2[idx], self.ops[idx], self.result[idx])

    def tokens(self, vocab: Vocab) -> torch.Tensor:
        """[N, 5] token ids: BOS op1 OP op2 '='; the result is predicted at the last position."""
        cols = [
            np.full(len(self), vocab.bos),
            self.op1,
            vocab.n_numbers + self.ops,
            self.op2,
            np.full(len(self), vocab.eq),
        ]
        return torch.as_tensor(np.stack(cols, axis=1), dtype=torch.long)


def all_legal(operators: tuple[str, ...], max_operand: int, n_numbers: int) -> Prompts:
    """Every legal prompt of the given operators, ordered by operator, op1, op2."""
    if 2 * (max_operand - 1) >= n_numbers and "+" in operators:
        raise ValueError(
            f"operand range [0, {max_operand}) gives sums up to {2 * (max_operand - 1)}, "
            f"outside the {n_numbers} number tokens"
        )
    parts = []
    for operator in operators:
        a, b = np.nonzero(legal_grid(operator, max_operand, n_numbers))
        k = np.full(len(a), OPERATORS.index(operator))
        parts.append((a, b, k, apply(operator, a, b)))
    return Prompts(*(np.concatenate(x) for x in zip(*parts, strict=True)))


def split(prompts: Prompts, train_frac: float, seed: int) -> tuple[Prompts, Prompts]:
    """Random train/held-out split of the legal prompts (deterministic in the seed)."""
    perm = np.random.default_rng(seed).permutation(len(prompts))
    n = round(train_frac * len(prompts))
    return prompts.subset(np.sort(perm[:n])), prompts.subset(np.sort(perm[n:]))


def sampling_weights(prompts: Prompts, zipf_a: float) -> np.ndarray:
    """Zipf-like skew toward small operands, balanced across operators (sums to 1)."""
    w = 1.0 / (1.0 + np.maximum(prompts.op1, prompts.op2)) ** zipf_a
    for k in np.unique(prompts.ops):
        mask = prompts.ops == k
        w[mask] /= w[mask].sum()
    return w / w.sum()


def counterfactuals(prompts: Prompts, pool: Prompts, seed: int) -> Prompts:
    """For each prompt, a prompt of the same operator from `pool` with a different result."""
    rng = np.random.default_rng(seed)
    idx = np.empty(len(prompts), dtype=np.int64)
    for i in range(len(prompts)):
        cand = np.nonzero((pool.ops == prompts.ops[i]) & (pool.result != prompts.result[i]))[0]
        if len(cand) == 0:
            raise ValueError("no counterfactual prompt with a different result in the pool")
        idx[i] = rng.choice(cand)
    return pool.subset(idx)
