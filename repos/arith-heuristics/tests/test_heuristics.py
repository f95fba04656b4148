"""Algorithm 1: planted neurons score 1.0 on their heuristic, random maps score near chance."""

from __future__ import annotations

import numpy as np
import pytest

from arith_heuristics.data import legal_grid
from arith_heuristics.heuristics import classify, heuristics_for, score, score_all

G, N = 150, 300


def _named(hs, name):
    return next(j for j, h in enumerate(hs) if h.name == name)


def test_planted_neurons_score_one_on_their_heuristic():
    hs = heuristics_for("+", G, N)
    legal = legal_grid("+", G, N)
    a, b = np.meshgrid(np.arange(G), np.arange(G), indexing="ij")
    planted = np.stack([((a >= 90) & (a < 120)).astype(float), (b % 7 == 3).astype(float)])
    lens = np.ones_like(planted)
    s = score_all(planted, lens, hs, legal)
    i_range, i_mod = _named(hs, "op1 range [90,120)"), _named(hs, "op2 = 3 mod 7")
    assert s[0, i_range] == 1.0 and s[1, i_mod] == 1.0
    assert s[0, i_mod] < 0.3 and s[1, i_range] < 0.3
    assert i_range in classify(s, 0.6)[0] and i_mod in classify(s, 0.6)[1]


@pytest.mark.parametrize("operator", ["-", "*"])
def test_score_all_matches_the_single_heuristic_reference(operator):
    """Every heuristic, including x's capped result heuristics (k < |assoc|)."""
    hs = heuristics_for(operator, 40, 80)
    legal = legal_grid(operator, 40, 80)
    rng = np.random.default_rng(0)
    maps = rng.standard_normal((3, 40, 40))
    lens = rng.standard_normal((3, 40, 40))
    s = score_all(maps, lens, hs, legal)
    for j in range(0, len(hs), 7):
        m = maps * lens if hs[j].direct else maps
        for n in range(3):
            assert np.isclose(s[n, j], score(m[n], hs[j], legal))
    capped = [j for j, h in enumerate(hs) if h.k < h.mask.sum()]
    assert (operator == "*") == bool(capped)
    for j in capped:
        assert np.isclose(s[0, j], score(maps[0] * lens[0], hs[j], legal))


def test_random_map_scores_near_chance():
    hs = heuristics_for("+", 60, 120)
    legal = legal_grid("+", 60, 120)
    maps = np.random.default_rng(1).standard_normal((20, 60, 60))
    s = score_all(maps, np.ones_like(maps), hs, legal)
    chance = np.array([h.mask.sum() / legal.sum() for h in hs])
    assert abs(float(s.mean(0).mean() - chance.mean())) < 0.05
    # large heuristics (>= 100 prompts) never pass t = 0.6 by chance
    big = np.array([h.mask.sum() >= 100 for h in hs])
    assert (s[:, big] < 0.6).all()


def test_no_heuristic_matches_everything():
    legal = legal_grid("/", 50, 100)
    for h in heuristics_for("/", 50, 100):
        assert 0 < h.mask.sum() <= 0.5 * legal.sum() and not (h.mask & ~legal).any()


def test_multiplication_result_heuristics_cap_k_at_max_operand():
    hs = heuristics_for("*", 40, 80)
    direct = [h for h in hs if h.direct]
    assert direct and all(h.k == min(int(h.mask.sum()), 40) for h in direct)
    assert any(int(h.mask.sum()) > 40 for h in direct)
    assert all(h.k == int(h.mask.sum()) for h in hs if not h.direct)


def test_operand_ranges_step_by_their_length_and_both_operand_heuristics_exist():
    names = {h.name for h in heuristics_for("+", 60, 120)}
    assert {"op1 range [0,10)", "op1 range [10,20)", "op1 range [30,60)"} <= names
    assert "op1 range [3,13)" not in names and "op1 range [10,40)" not in names
    assert {"both operands range [10,20)", "both operands = 2 mod 3"} <= names
    assert "result range [10,40)" in names  # result ranges start every max(len // 3, 10)


def test_division_has_no_result_zero_or_result_pattern_heuristics():
    for h in heuristics_for("/", 40, 80):
        if h.direct:
            assert "pattern" not in h.name and "mod" not in h.name
            assert not (h.mask & (np.arange(40)[:, None] < np.arange(40)[None, :])).any()


def test_planted_both_operand_neuron_is_classified():
    hs = heuristics_for("+", 60, 120)
    legal = legal_grid("+", 60, 120)
    a, b = np.meshgrid(np.arange(60), np.arange(60), indexing="ij")
    planted = ((a % 3 == 1) & (b % 3 == 1)).astype(float)[None]
    s = score_all(planted, np.ones_like(planted), hs, legal)
    assert s[0, _named(hs, "both operands = 1 mod 3")] == 1.0


def test_official_k_rule_closed_forms():
    """heuristics_classification.py's k: (max_op // n) * max_op for an operand modulo,
    (max_op // n)^2 for both operands, max_op for patterns and identical operands, sqrt of the
    largest number for x's identical operands; ranges keep the count."""
    count = {h.name: h for h in heuristics_for("+", 60, 120)}
    off = {h.name: h for h in heuristics_for("+", 60, 120, k_rule="official")}
    assert count["op1 = 3 mod 7"].k == 9 * 60 and off["op1 = 3 mod 7"].k == 8 * 60
    assert off["op2 = 3 mod 7"].k == 8 * 60
    assert off["both operands = 1 mod 3"].k == 20 * 20
    assert count["op1 pattern ..3"].k == 6 * 60 and off["op1 pattern ..3"].k == 60
    assert off["identical operands"].k == 60 and off["op1 range [10,20)"].k == 600
    assert "op1 = 0 mod 10" in off and "op1 = 0 mod 11" not in off
    assert "op1 = 0 mod 11" in count and "op1 = 0 mod 10" not in count
    mult = {h.name: h for h in heuristics_for("*", 40, 80, k_rule="official")}
    assert mult["identical operands"].k == 8  # int(sqrt(79))
    with pytest.raises(ValueError, match="k_rule"):
        heuristics_for("+", 10, 20, k_rule="closed")


def test_the_two_k_rules_classify_a_narrow_pattern_neuron_differently():
    """A neuron firing on op1 in {3, 13} only: under the count rule the '..3' pattern's top
    360 prompts hold 120 of its prompts (score 1/3); under the official k = 60 it scores 1."""
    legal = legal_grid("+", 60, 120)
    a = np.meshgrid(np.arange(60), np.arange(60), indexing="ij")[0]
    planted = np.isin(a, (3, 13)).astype(float)[None]
    for rule, want in (("count", 1 / 3), ("official", 1.0)):
        hs = heuristics_for("+", 60, 120, k_rule=rule)
        s = score_all(planted, np.ones_like(planted), hs, legal)
        assert s[0, _named(hs, "op1 pattern ..3")] == pytest.approx(want)
