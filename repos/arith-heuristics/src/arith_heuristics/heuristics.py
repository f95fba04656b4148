"""Heuristic types and their classification (Algorithm 1, heuristics_classification.py).

A heuristic is a boolean map over the (op1, op2) grid of one operator: the prompts it is
"associated" with. A neuron's activation map A over the same grid implements heuristic H when
|top-k(A) cap assoc(H)| / k >= t with k = |assoc(H)|. Result-related ("direct") heuristics are
scored on A o L, where L[i, j] is the logit-lens logit of the result token of i o j in v_out W_U;
for x and / their k is capped at max_op (the official code's fix for the skewed result counts).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .data import apply, legal_grid

MODULI = (2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 15)
"""The paper's modulo set {2..9, 11, 13, 15} (the official code uses 2..10)."""
OFFICIAL_MODULI = tuple(range(2, 11))
"""heuristics_classification.py's modulo set, used with the official k rule."""
K_RULES = ("count", "official")
"""How k is set: 'count' is Algorithm 1 as written (k = |assoc(H)|); 'official' is the closed
form heuristics_classification.py uses for modulo, pattern, value and identical-operand
heuristics (ranges are counted in both)."""

OPERAND_RANGES = {"+": (10, 30, 50, 100), "-": (10, 30, 50, 100), "*": (3, 5, 10)}
"""Operand range lengths per operator (official code; '/' as '+'); starts every `length`."""
RESULT_RANGES = {"+": (10, 30, 50), "-": (10, 30, 50), "*": (10, 30, 50, 100), "/": (2, 10, 100)}
"""Result range lengths per operator (official code); starts every max(length // 3, 10)."""


@dataclasses.dataclass(frozen=True)
class Heuristic:
    name: str
    direct: bool
    """Scored on the logit-lens weighted map A o L (result heuristics)."""
    mask: np.ndarray
    """Boolean [max_operand, max_operand]: associated legal prompts."""
    k: int
    """How many top prompts are compared with the mask (|mask|, capped for x and / results)."""


def kind(name: str) -> str:
    """The heuristic type of a heuristic name (for the breakdown of classified neurons)."""
    for word, label in (("range", "range"), ("mod", "modulo"), ("pattern", "pattern")):
        if word in name:
            return label
    return "value" if "value" in name else "identical"


def _digit_patterns(v: np.ndarray) -> dict[str, np.ndarray]:
    """Periodic wildcard patterns of a 3-digit value: '.23', '1.3', '..3', '.2.' (official
    code). Patterns with a fixed leading digit and a wild last digit ('12.', '1..') are ranges
    and left to the range heuristics."""
    d = [(v // 100) % 10, (v // 10) % 10, v % 10]
    out = {}
    for x in range(10):
        out[f"..{x}"] = d[2] == x
        out[f".{x}."] = d[1] == x
        for y in range(10):
            out[f".{x}{y}"] = (d[1] == x) & (d[2] == y)
            out[f"{x}.{y}"] = (d[0] == x) & (d[2] == y)
    return out


def official_k(
    name: str, operator: str, max_operand: int, n_numbers: int, n_legal: int
) -> int | None:
    """heuristics_classification.py's closed-form k for a heuristic name (None: counted).
    factor is the legal share of the operand grid (1 for +, about 1/2 for -)."""
    factor = n_legal / max_operand**2
    if " mod " in name:
        n = int(name.rsplit(" ", 1)[1])
        per_operand = name.startswith(("op1", "op2"))
        k = (max_operand // n) * (max_operand if per_operand else max_operand // n) * factor
        return int(k)
    if "pattern" in name or "value" in name:
        return int(max_operand * factor)
    if name == "identical operands":
        return int((n_numbers - 1) ** 0.5) if operator == "*" else max_operand
    return None


def heuristics_for(
    operator: str,
    max_operand: int,
    n_numbers: int,
    max_share: float = 0.5,
    k_rule: str = "count",
) -> list[Heuristic]:
    """Every candidate heuristic of one operator: operand, both-operand and result ranges,
    modulo conditions and digit patterns, result values, identical operands; k by `k_rule`."""
    if k_rule not in K_RULES:
        raise ValueError(f"k_rule must be one of {K_RULES}, got {k_rule!r}")
    legal = legal_grid(operator, max_operand, n_numbers)
    a, b = np.meshgrid(np.arange(max_operand), np.arange(max_operand), indexing="ij")
    res = np.where(legal, apply(operator, a, b), -1)
    top_result = int(res.max()) + 1
    cap = max_operand if operator in "*/" else None
    n_legal = int(legal.sum())
    out: list[Heuristic] = []

    def add(name: str, direct: bool, mask: np.ndarray) -> None:
        mask = mask & legal
        n = int(mask.sum())
        if direct and operator == "/" and (mask & (res == 0)).any():
            return  # official code drops division's result heuristics that include 0
        if 0 < n <= max_share * n_legal:
            k = n
            if k_rule == "official":
                closed = official_k(name, operator, max_operand, n_numbers, n_legal)
                k = n if closed is None else min(max(closed, 1), n_legal)
            k = min(k, cap) if direct and cap else k
            out.append(Heuristic(name, direct, mask, k))

    for length in OPERAND_RANGES.get(operator, OPERAND_RANGES["+"]):
        for start in range(0, max_operand, length) if length < max_operand else ():
            span = f"[{start},{start + length})"
            in1, in2 = (a >= start) & (a < start + length), (b >= start) & (b < start + length)
            add(f"op1 range {span}", False, in1)
            add(f"op2 range {span}", False, in2)
            add(f"both operands range {span}", False, in1 & in2)
    for length in RESULT_RANGES[operator]:
        for start in range(0, top_result, max(length // 3, 10)) if length < top_result else ():
            add(
                f"result range [{start},{start + length})",
                True,
                (res >= start) & (res < start + length),
            )
    for n in MODULI if k_rule == "count" else OFFICIAL_MODULI:
        for m in range(n):
            add(f"op1 = {m} mod {n}", False, a % n == m)
            add(f"op2 = {m} mod {n}", False, b % n == m)
            add(f"both operands = {m} mod {n}", False, (a % n == m) & (b % n == m))
            if operator != "/":
                add(f"result = {m} mod {n}", True, (res >= 0) & (res % n == m))
    for role, v, direct in (("op1", a, False), ("op2", b, False), ("result", res, True)):
        if role == "result" and operator == "/":
            continue  # official code: too few division results for patterns
        for pattern, mask in _digit_patterns(v).items():
            add(f"{role} pattern {pattern}", direct, (v >= 0) & mask)
    for value in range(top_result):
        add(f"result value {value}", True, res == value)
    add("identical operands", False, a == b)
    return out


def score(act_map: np.ndarray, h: Heuristic, legal: np.ndarray) -> float:
    """|top-k prompts of A cap associated prompts| / k (Algorithm 1), the slow reference."""
    flat = np.where(legal, act_map, -np.inf).ravel()
    top = np.argsort(-flat, kind="stable")[: h.k]
    return float(h.mask.ravel()[top].sum() / h.k)


def score_all(
    act_maps: np.ndarray, lens_maps: np.ndarray, heuristics: list[Heuristic], legal: np.ndarray
) -> np.ndarray:
    """[neurons, heuristics] scores. act_maps: [N, G, G] activations; lens_maps: [N, G, G] L."""
    n = act_maps.shape[0]
    out = np.zeros((n, len(heuristics)))
    legal_flat = legal.ravel()
    for which, maps in ((False, act_maps), (True, act_maps * lens_maps)):
        cols = [j for j, h in enumerate(heuristics) if h.direct == which]
        if not cols or n == 0:
            continue
        flat = np.where(legal_flat[None], maps.reshape(n, -1), -np.inf)
        order = np.argsort(-flat, axis=1, kind="stable")  # one sort per neuron serves all
        for j in cols:
            h = heuristics[j]
            out[:, j] = h.mask.ravel()[order[:, : h.k]].sum(1) / h.k
    return out


def classify(scores: np.ndarray, threshold: float) -> list[list[int]]:
    """For each neuron, the indices of the heuristics it implements (score >= t)."""
    return [list(np.nonzero(row >= threshold)[0]) for row in scores]
