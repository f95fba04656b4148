"""Prompt legality (single-token results, non-negative subtraction, integer division), bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from arith_heuristics.config import OPERATORS, PRESETS, validate
from arith_heuristics.data import Vocab, all_legal, apply, counterfactuals, legal_grid, split


def test_legal_prompts_follow_the_rules():
    p = all_legal(OPERATORS, 60, 120)
    assert np.all((p.result >= 0) & (p.result < 120))
    for k, op in enumerate(OPERATORS):
        m = p.ops == k
        assert np.array_equal(p.result[m], apply(op, p.op1[m], p.op2[m]))
    sub = p.ops == OPERATORS.index("-")
    assert np.all(p.op1[sub] >= p.op2[sub])
    div = p.ops == OPERATORS.index("/")
    assert np.all(p.op2[div] > 0) and np.array_equal(p.result[div], p.op1[div] // p.op2[div])
    mul = legal_grid("*", 60, 120)
    assert mul[11, 10] and not mul[11, 11]  # 110 is one token, 121 is not


def test_tokens_and_vocab():
    v = Vocab(20)
    p = all_legal(("+",), 5, 20)
    t = p.tokens(v)
    assert t.shape == (len(p), 5)
    assert (t[:, 0] == v.bos).all() and (t[:, 2] == v.op("+")).all() and (t[:, 4] == v.eq).all()
    assert int(t.max()) < v.size


def test_split_is_a_partition_and_deterministic():
    p = all_legal(OPERATORS, 20, 40)
    a, b = split(p, 0.8, 3)
    assert len(a) + len(b) == len(p)
    pairs = {(x, y, z) for x, y, z in zip(a.op1, a.op2, a.ops, strict=True)}
    assert not pairs & {(x, y, z) for x, y, z in zip(b.op1, b.op2, b.ops, strict=True)}
    assert np.array_equal(split(p, 0.8, 3)[0].op1, a.op1)


def test_counterfactuals_have_a_different_result_and_the_same_operator():
    p = all_legal(OPERATORS, 20, 40)
    cf = counterfactuals(p.subset(np.arange(0, len(p), 7)), p, 0)
    orig = p.subset(np.arange(0, len(p), 7))
    assert np.all(cf.result != orig.result) and np.array_equal(cf.ops, orig.ops)


def test_unknown_operator_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown operator '%'"):
        apply("%", np.array([1]), np.array([2]))
    with pytest.raises(ValueError, match="unknown operator"):
        Vocab(10).op("^")


def test_results_outside_the_vocabulary_are_a_clear_error():
    with pytest.raises(ValueError, match="outside the vocabulary"):
        validate(dataclasses.replace(PRESETS["quick"], max_operand=150, n_numbers=200))
    with pytest.raises(ValueError, match="outside the 200 number tokens"):
        all_legal(OPERATORS, 150, 200)
