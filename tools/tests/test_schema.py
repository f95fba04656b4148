"""The results schema rejects each kind of malformed file with a message naming the fault."""

from __future__ import annotations

import json

import pytest
from conftest import good_results
from schema import load_results, validate_results


def test_good_results_are_valid():
    assert validate_results(good_results("p"), "p") == []


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("claims"), "missing key 'claims'"),
        (lambda d: d.pop("wall_seconds"), "missing key 'wall_seconds'"),
        (lambda d: d["claims"][0].update(holds="yes"), "'holds' must be true or false"),
        (lambda d: d["claims"][0].pop("paper"), "claim beats lacks 'paper'"),
        (lambda d: d["claims"][0].update(paper="  "), "'paper' is empty"),
        (lambda d: d.update(claims=[]), "claims must be a non-empty list"),
        (lambda d: d["metrics"].pop("Base"), "at least one baseline"),
        (lambda d: d.update(paper="other"), "expected 'p'"),
        (lambda d: d["performance"][0].pop("what"), "performance speed lacks 'what'"),
    ],
)
def test_malformed_results_are_named(mutate, message):
    data = good_results("p")
    mutate(data)
    problems = validate_results(data, "p")
    assert any(message in p for p in problems), problems


def test_unreadable_file_is_reported(tmp_path):
    path = tmp_path / "quick.json"
    path.write_text("{not json")
    data, problems = load_results(path)
    assert data is None and "unreadable results file" in problems[0]


def test_non_object_top_level(tmp_path):
    path = tmp_path / "quick.json"
    path.write_text(json.dumps([1, 2]))
    assert "expected an object" in load_results(path)[1][0]
