"""The results schema rejects each kind of malformed file with a message naming the fault."""

from __future__ import annotations

import json

import pytest
from conftest import good_results
from schema import is_timing_key, load_results, perf_figures, validate_results


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


def unit_row(**extra) -> dict:
    row = {"id": "rate", "what": "updates", "unit": "updates/s", "higher_is_better": True}
    row.update(extra)
    return row


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (unit_row(), "no measured figure"),
        (unit_row(ours_value=3.0, peer="lib"), "names peer 'lib' without a measured 'peer_value'"),
        ({"id": "x", "what": "w", "ours_value": 1.0}, "needs a 'unit'"),
        (unit_row(ours_value=1.0, higher_is_better="yes"), "'higher_is_better' must be true"),
        ({"id": "x", "what": "w", "peer": "lib", "peer_s": 1.0}, "no measured figure"),
        (unit_row(ours_value=float("nan")), "no measured figure"),
    ],
)
def test_performance_rows_need_measured_figures_and_units(row, message):
    data = good_results("p")
    data["performance"] = [row]
    problems = validate_results(data, "p")
    assert any(message in p for p in problems), problems


def test_performance_units_and_legacy_seconds_are_read():
    assert perf_figures(unit_row(ours_value=68.9, peer="IQL", peer_value=610.0)) == (
        68.9,
        610.0,
        "updates/s",
        True,
    )
    assert perf_figures({"id": "t", "what": "w", "ours_s": 2.0, "peer_s": 1.0}) == (
        2.0,
        1.0,
        "s",
        False,
    )
    data = good_results("p")
    data["performance"].append(unit_row(ours_value=68.9))
    assert validate_results(data, "p") == []


def test_mode_follows_the_file_name(tmp_path):
    path = tmp_path / "paper.json"
    path.write_text(json.dumps(good_results("p")))  # its mode is "quick"
    data, problems = load_results(path, "p")
    assert data is None and "mode is 'quick', expected 'paper'" in problems[0]


def test_malformed_performance_row_is_dropped_not_the_file(tmp_path):
    doc = good_results("p")
    doc["performance"].append({"id": "dash", "what": "w", "peer": "lib"})
    path = tmp_path / "quick.json"
    path.write_text(json.dumps(doc))
    data, problems = load_results(path, "p")
    assert data is not None and [r["id"] for r in data["performance"]] == ["speed"]
    assert any("performance dash" in p for p in problems)


def test_tolerance_needs_numbers_and_a_reason():
    data = good_results("p")
    data["tolerance"] = {"rtol": -1}
    problems = validate_results(data, "p")
    assert any("'rtol' must be a number >= 0" in p for p in problems)
    assert any("needs a 'why'" in p for p in problems)
    data["tolerance"] = {"rtol": 1e-3, "why": "sparse scatter order"}
    assert validate_results(data, "p") == []


@pytest.mark.parametrize(
    ("name", "timing"),
    [
        ("wall_seconds", True),
        ("ours_s", True),
        ("steps_per_s", True),
        ("time_to_gap", True),
        ("latency_ms", True),
        ("samples_per_second", True),
        ("normalized_success", False),
        ("updates_per_step", False),
        ("gap", False),
        ("success_rate", False),
    ],
)
def test_timing_keys(name, timing):
    assert is_timing_key(name) is timing


def structured(interval, n=3, direction=">", threshold=0.0, estimate=1.0, **claim) -> dict:
    data = good_results("p")
    part = {
        "what": "A - B",
        "estimate": estimate,
        "interval": list(interval),
        "level": 0.95,
        "method": "paired t over seeds",
        "threshold": threshold,
        "direction": direction,
        "n": n,
        "unit": "points",
    }
    data["claims"][0].update({"test": [part], **claim})
    return data


@pytest.mark.parametrize(
    ("interval", "n", "verdict", "holds", "extra"),
    [
        ((0.5, 1.5), 3, "holds", True, {}),
        ((-3.0, -1.0), 3, "contradicted", False, {}),
        ((-0.5, 2.5), 3, "inconclusive", False, {"seeds_needed": 7}),
    ],
)
def test_consistent_structured_claims_pass(interval, n, verdict, holds, extra):
    data = structured(interval, n, verdict=verdict, holds=holds, **extra)
    assert validate_results(data, "p") == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # a holds whose interval crosses its threshold
        (
            structured((-0.5, 2.5), verdict="holds", holds=True),
            "stored verdict 'holds' does not follow from its numbers ('inconclusive')",
        ),
        # a holds on two paired seeds
        (
            structured((0.5, 1.5), n=2, verdict="holds", holds=True),
            "needs >= 3 paired units",
        ),
        # a missing verdict line
        (structured((0.5, 1.5), holds=True), "has 'test' but no 'verdict' line"),
        (structured((0.5, 1.5), verdict="holds", holds=False), "'holds' must be True"),
        (
            structured((-0.5, 2.5), verdict="inconclusive", holds=False, seeds_needed=3),
            "seeds_needed must be 7",
        ),
        (structured((1.5, 0.5), verdict="holds", holds=True), "is reversed"),
        (structured((0.5, 1.5), direction=">=", verdict="holds", holds=True), "direction must"),
    ],
)
def test_inconsistent_structured_claims_are_rejected(data, message):
    problems = validate_results(data, "p")
    assert any(message in p for p in problems), problems


def test_verdict_without_test_is_rejected():
    data = good_results("p")
    data["claims"][0]["verdict"] = "holds"
    assert any("needs the 'test' parts" in p for p in validate_results(data, "p"))


def gated(pre_interval, **second) -> dict:
    """Two structured claims: 'pre' (interval pre_interval) and 'beats2' read under it."""
    data = structured(pre_interval, verdict=None)
    pre = data["claims"][0]
    pre.update(id="pre")
    pre["verdict"] = {(0.5, 1.5): "holds", (-3.0, -1.0): "contradicted"}[pre_interval]
    pre["holds"] = pre["verdict"] == "holds"
    two = json.loads(json.dumps(structured((0.5, 1.5))["claims"][0]))
    two.update(id="beats2", precondition="pre", **second)
    data["claims"] = [pre, two]
    return data


def test_a_claim_under_a_failed_precondition_is_inconclusive():
    read = {"verdict": "holds", "holds": True}
    assert validate_results(gated((0.5, 1.5), **read), "p") == []
    unread = {
        "verdict": "inconclusive",
        "holds": False,
        "verdict_of_numbers": "holds",
        "not_read": "precondition pre is contradicted",
    }
    assert validate_results(gated((-3.0, -1.0), **unread), "p") == []
    for bad, message in [
        (read, "so 'verdict' must be 'inconclusive'"),
        ({**unread, "seeds_needed": 5}, "no seeds_needed when a precondition fails"),
        ({**unread, "not_read": ""}, "'not_read' must say which precondition fails"),
        ({**unread, "verdict_of_numbers": "contradicted"}, "'verdict_of_numbers' must be 'holds'"),
    ]:
        problems = validate_results(gated((-3.0, -1.0), **bad), "p")
        assert any(message in p for p in problems), problems
    problems = validate_results(gated((0.5, 1.5), **unread), "p")
    assert any("'not_read' but its precondition holds" in p for p in problems), problems
    missing = gated((0.5, 1.5), **read)
    missing["claims"][1]["precondition"] = "nowhere"
    assert any("'nowhere' is not a claim" in p for p in validate_results(missing, "p"))


def test_the_command_line_names_problems(tmp_path, capsys):
    from schema import main

    (tmp_path / "p" / "results").mkdir(parents=True)
    good = tmp_path / "p" / "results" / "quick.json"
    good.write_text(json.dumps({**good_results("p"), "mode": "quick"}))
    assert main([str(good)]) == 0
    bad = tmp_path / "p" / "results" / "paper.json"
    bad.write_text("{")
    assert main([str(good), str(bad)]) == 1
    assert "unreadable results file" in capsys.readouterr().out
