"""SQuAD metrics, action parsing, rewards and the retrieval quota."""

from __future__ import annotations

import pytest

from smartrag.env import (
    Action,
    action_reward,
    exact_match,
    f1_score,
    must_answer,
    normalize_answer,
    parse_action,
)


@pytest.mark.parametrize(
    ("raw", "norm"),
    [("The  Eiffel Tower!", "eiffel tower"), ("an apple, a pear", "apple pear"), ("A", "")],
)
def test_squad_normalisation(raw, norm):
    assert normalize_answer(raw) == norm


def test_exact_match_and_f1_known_cases():
    assert exact_match("the Paris", ["paris", "London"]) == 1.0
    assert exact_match("paris france", ["paris"]) == 0.0
    # precision 1/2, recall 1/1 -> F1 = 2/3
    assert f1_score("paris france", ["paris"]) == pytest.approx(2 / 3)
    assert f1_score("new york city", ["york", "new york"]) == pytest.approx(0.8)
    assert f1_score("berlin", ["paris"]) == 0.0


def test_parse_action():
    assert parse_action(["[SEARCH]", "bo ka", "born", "<eos>", "<pad>"]) == Action(
        "search", "bo ka born"
    )
    assert parse_action(["[ANSWER]", "lima", "<eos>"]) == Action("answer", "lima")
    assert parse_action(["lima", "<eos>"]).kind == "malformed"
    assert parse_action([]).kind == "malformed"


def test_rewards_for_answer_search_and_malformed():
    answers = ("lima",)
    assert action_reward(Action("answer", "Lima"), answers, alpha=0.2) == 2.0
    assert action_reward(Action("answer", "quito"), answers, alpha=0.2) == 0.0
    assert action_reward(Action("search", "anything"), answers, alpha=0.2) == -0.2
    assert action_reward(Action("search", "anything"), answers, alpha=0.0) == 0.0
    assert action_reward(Action("malformed", "lima"), answers, alpha=0.2) == -1.0


def test_quota():
    assert not must_answer(0, 1)
    assert must_answer(1, 1)
    assert must_answer(0, 0)
    with pytest.raises(ValueError, match="quota must be >= 0, got -1"):
        must_answer(0, -1)
