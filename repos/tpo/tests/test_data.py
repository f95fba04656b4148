"""Data: generators, the judge, the tree loader and its errors on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tpo.data import (
    Problem,
    Tokenizer,
    Tree,
    judge,
    load_trees,
    parse_prompt,
    random_problem,
    save_trees,
    slipped_solution,
    solution,
    validate_tree,
    wrong_solution,
)

P = Problem(7, (("+", 3), ("*", 2), ("-", 4)), 10)


def test_solution_and_judge_closed_form():
    assert P.prompt() == "x 7 + 3 * 2 - 4 ?"
    assert solution(P) == "S 7 + 3 = 0 S 0 * 2 = 0 S 0 - 4 = 6 A 6"
    assert parse_prompt(P.prompt(), 10) == P
    assert judge(P, solution(P)) == 100.0
    # wrong at step 1 (0-based), propagated: first error 1 of T=3 -> -100 + 150/3
    assert judge(P, solution(P, corrupt_at=1, wrong_value=5)) == pytest.approx(-50.0)
    # right answer despite one miscopied step: 100 - 10
    assert judge(P, "S 7 + 3 = 0 S 0 * 2 = 0 S 0 - 4 = 1 A 6") == 90.0
    assert judge(P, "S 7 + 3") == -100.0


def test_generators_are_deterministic_in_the_seed():
    a = [random_problem(np.random.default_rng(5), 4, 10) for _ in range(3)]
    b = [random_problem(np.random.default_rng(5), 4, 10) for _ in range(3)]
    assert a == b
    wrong, k = wrong_solution(P, np.random.default_rng(0))
    assert wrong != solution(P) and judge(P, wrong) < 100 and 0 <= k < 3


def test_trees_round_trip_through_jsonl(tmp_path):
    trees = [Tree(P.prompt(), [solution(P), "S 7 + 3 = 1 A 1"], [100.0, -100.0], [3, 0])]
    save_trees(tmp_path / "t.jsonl", trees)
    assert load_trees(tmp_path / "t.jsonl") == trees


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ({"prompt": "x 1 + 1 ?", "responses": ["S 1 + 1 = 2 A 2"], "scores": [100]}, ">= 2"),
        (
            {
                "prompt": "x 1 + 1 ?",
                "responses": ["S 1 + 1 = 2 A 2", "S 1 A 1"],
                "scores": [1, None],
            },
            "finite number",
        ),
        (
            {"prompt": "x 1 + 1 ?", "responses": ["A 2", "S 1 A 1"], "scores": [100, 0]},
            "step marker",
        ),
        ({"prompt": "x 1 + 1 ?", "responses": ["S 2 A 2", "S 1 A 1"]}, "missing keys"),
    ],
)
def test_bad_trees_are_clear_errors(tmp_path, tree, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(tree) + "\n")
    with pytest.raises(ValueError, match=message):
        load_trees(path)


def test_nan_score_is_rejected():
    tree = Tree("x 1 + 1 ?", ["S 1 + 1 = 2 A 2", "S 1 A 1"], [100.0, float("nan")])
    with pytest.raises(ValueError, match="score 1 is nan"):
        validate_tree(tree)


def test_unknown_token_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown token 'Step'"):
        Tokenizer(10).encode("Step 1 + 1")


def test_slipped_solution_forgets_the_sign_change_and_the_judge_sees_it():
    """The systematic slip (sft_slip): a step 'v * b' with 2b > m writes v, later steps continue
    from it; other steps are computed right, so a problem without such a step is unchanged."""
    p = Problem(2, (("+", 1), ("*", 4), ("-", 1)), 5)
    assert slipped_solution(p) == "S 2 + 1 = 3 S 3 * 4 = 3 S 3 - 1 = 2 A 2"
    assert solution(p) == "S 2 + 1 = 3 S 3 * 4 = 2 S 2 - 1 = 1 A 1"
    assert judge(p, slipped_solution(p)) == pytest.approx(-100 + 150 * 1 / 3)
    assert slipped_solution(Problem(2, (("*", 3),), 5)) == "S 2 * 3 = 2 A 2"
    plain = Problem(2, (("+", 1), ("*", 2), ("-", 1)), 5)
    assert slipped_solution(plain) == solution(plain)
