"""Instances: deterministic generators, the DIMACS round trip, and clear errors on bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from oft_sinkhorn import data, solvers

CHAIN = {"n": 3, "tail": [0, 1], "head": [1, 2], "cost": [1.0, 1.0], "supply": [1.0, 0.0, -1.0]}


@pytest.mark.parametrize("make", [data.uniform_mcf, data.netgen_mcf])
def test_generators_are_deterministic_in_the_seed(make):
    a, b, c = make(30, seed=5), make(30, seed=5), make(30, seed=6)
    for field in dataclasses.fields(data.Instance):
        np.testing.assert_array_equal(getattr(a, field.name), getattr(b, field.name))
    assert a.n_arcs != c.n_arcs or not np.array_equal(a.cost, c.cost)
    assert a.supply.sum() == 0 and np.all(a.cost >= 10) and np.all(a.cost <= 100)


def test_dimacs_round_trip(tmp_path):
    inst = data.netgen_mcf(25, seed=2, capacitated=True)
    data.write_dimacs(inst, tmp_path / "g.min", comment="netgen-style\nseed 2")
    back = data.read_dimacs(tmp_path / "g.min")
    for field in dataclasses.fields(data.Instance):
        np.testing.assert_array_equal(getattr(back, field.name), getattr(inst, field.name))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"supply": [1.0, 0.0, -0.5]}, "supplies must sum to 0"),
        ({"cost": [1.0, np.nan]}, "cost must be finite, got nan at index 1"),
        ({"supply": [-1.0, 0.0, 1.0]}, "no feasible flow"),
        (
            {"n": 3, "tail": [0, 1, 2], "head": [1, 2, 0], "cost": [1.0, 1.0, -5.0]},
            "negative-cost cycle",
        ),
        ({"capacity": [1.0, -2.0]}, "capacity must be >= 0"),
        ({"capacity": [0.5, 1.0]}, "only 0.5 of the total supply 1"),
        ({"head": [1, 1], "tail": [0, 1]}, "self-loop arc at index 1"),
        ({"cost": [1.0, 2.0, 3.0]}, "cost has shape"),
    ],
)
def test_bad_instances_raise_clear_errors(change, message):
    with pytest.raises(ValueError, match=message):
        data.make_instance(**(CHAIN | change))


def test_solver_rechecks_instances_built_by_hand():
    good = data.make_instance(**CHAIN)
    with pytest.raises(ValueError, match="supplies must sum to 0"):
        solvers.oft_sinkhorn(dataclasses.replace(good, supply=np.array([2.0, 0.0, -1.0])), (0.1,))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("p min 2 1\nn 1 1\nn 2 -1\na 1 2 0 5\n", ":4: 'a 1 2 0 5': expected 5 integers"),
        ("c ok\np min 2 1\nn 1 x\n", ":3: 'n 1 x': expected integer fields"),
        ("n 1 1\n", ":1: 'n 1 1': 'n' line before the 'p min' line"),
        (
            "p min 2 1\na 1 3 0 5 1\n",
            ":2: 'a 1 3 0 5 1': expected 5 integers with node ids in 1..2",
        ),
        ("p min 2 1\na 1 2 1 5 1\n", ":2: 'a 1 2 1 5 1': lower bound 1 is not supported"),
        ("p max 2 1\n", ":1: 'p max 2 1': expected one 'p min NODES ARCS' line"),
        ("p min 2 2\nn 1 1\nn 2 -1\na 1 2 0 5 1\n", "announces 2 arcs, found 1"),
    ],
)
def test_malformed_dimacs_names_the_line(tmp_path, text, message):
    path = tmp_path / "bad.min"
    path.write_text(text)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")) as err:
        data.read_dimacs(path)
    assert str(path) in str(err.value) or "announces" in message
