"""Heuristic types and their classification (Algorithm 1, heuristics_classification.py).

A heuristic is a boolean map over the (op1, op2) grid of one operator: the prompts it is
"associated" with. A neuron's activation map A over the same grid implements heuristic H when
|top-k(A) cap assoc(H)| / k >= t with k = |assoc(H)|. Result-related ("direct") heuristics are
scored on A o L, where L[i, j] is the logit-lens logit of the result token of i o j in v_out W_U.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .data import apply, legal_grid

MODULI = (2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 15)
"""The paper's modulo set {2..9, 11, 13, 15} (the official code uses 2..10)."""


@dataclasses.dataclass(frozen=True)
class Heuristic:
    name: str
    direct: bool
    """Scored on the logit-lens weighted map A o L (result heuristics)."""
    mask: np.ndarray
    """Boolean [max_operand, max_operand]: associated legal prompts."""


def _range_lengths(operator: str, top: int) -> tuple[int, ...]:
    # the paper uses 10/30/50/100 (division: 2/10/100) over [0, 300); scaled to our range
    base = (2, 10, 100) if operator == "/" else (10, 30, 50, 100)
    return tuple(n for n in base if n < top)


def heuristics_for(
    operator: str, max_operand: int, n_numbers: int, max_share: float = 0.5
) -> list[Heuristic]:
    """Every candidate heuristic of one operator: ranges, modulo, digit patterns, identical."""
    legal = legal_grid(operator, max_operand, n_numbers)
    a, b = np.meshgrid(np.arange(max_operand), np.arange(max_operand), indexing="ij")
    res = np.where(legal, apply(operator, a, b), -1)
    values = {"op1": (a, max_operand, False), "op2": (b, max_operand, False)}
    values["result"] = (res, n_numbers, True)
    out: list[Heuristic] = []

    def add(name: str, direct: bool, mask: np.ndarray) -> None:
        mask = mask & legal
        k = int(mask.sum())
        if 0 < k <= max_share * legal.sum():
            out.append(Heuristic(name, direct, mask))

    for role, (v, top, direct) in values.items():
        for length in _range_lengths(operator, top):
            for start in range(0, top - 1, max(length // 3, 10 if operator != "/" else 1)):
                add(
                    f"{role} range [{start},{start + length})",
                    direct,
                    (v >= start) & (v < start + length),
                )
        for n in MODULI:
            for m in range(n):
                add(f"{role} = {m} mod {n}", direct, (v >= 0) & (v % n == m))
        digits = [(v // 100) % 10, (v // 10) % 10, v % 10]
        for wild in range(3):
            fixed = [p for p in range(3) if p != wild]
            for d0 in range(10):
                for d1 in range(10):
                    pattern = ["."] * 3
                    pattern[fixed[0]], pattern[fixed[1]] = str(d0), str(d1)
                    mask = (v >= 0) & (digits[fixed[0]] == d0) & (digits[fixed[1]] == d1)
                    add(f"{role} pattern {''.join(pattern)}", direct, mask)
    add("identical operands", False, a == b)
    return out


def score(act_map: np.ndarray, mask: np.ndarray, legal: np.ndarray) -> float:
    """|top-k prompts of A cap associated prompts| / k, k = |associated| (Algorithm 1)."""
    k = int(mask.sum())
    flat = np.where(legal, act_map, -np.inf).ravel()
    top = np.argpartition(-flat, k - 1)[:k]
    return float(mask.ravel()[top].sum() / k)


def score_all(
    act_maps: np.ndarray, lens_maps: np.ndarray, heuristics: list[Heuristic], legal: np.ndarray
) -> np.ndarray:
    """[neurons, heuristics] scores. act_maps: [N, G, G] activations; lens_maps: [N, G, G] L."""
    n = act_maps.shape[0]
    out = np.zeros((n, len(heuristics)))
    legal_flat = legal.ravel()
    for which, maps in ((False, act_maps), (True, act_maps * lens_maps)):
        cols = [j for j, h in enumerate(heuristics) if h.direct == which]
        if not cols:
            continue
        flat = np.where(legal_flat[None], maps.reshape(n, -1), -np.inf)
        order = np.argsort(-flat, axis=1)  # one sort per neuron serves every heuristic
        for j in cols:
            mask = heuristics[j].mask.ravel()
            k = int(mask.sum())
            out[:, j] = mask[order[:, :k]].sum(1) / k
    return out


def classify(scores: np.ndarray, threshold: float) -> list[list[int]]:
    """For each neuron, the indices of the heuristics it implements (score >= t)."""
    return [list(np.nonzero(row >= threshold)[0]) for row in scores]
