"""Tidy CSV/NPZ paths: round trips and clear errors on malformed files."""

from __future__ import annotations

import numpy as np
import pytest

from sde_causal import paths_io, sde


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_round_trip_keeps_paths_times_and_names(tmp_path, suffix):
    fine = np.random.default_rng(0).normal(size=(5, 41, 3)).cumsum(1)
    paths, times = sde.observe(fine, 9, seed=0, irregular=True)
    file = tmp_path / f"paths{suffix}"
    paths_io.write_paths(file, paths, times, ["a", "b", "c"])
    got_paths, got_times, names = paths_io.read_paths(file)
    assert names == ["a", "b", "c"]
    np.testing.assert_allclose(got_paths, paths)
    np.testing.assert_allclose(got_times, times)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("time,path_id,a\n0,0,1.0\n1,0,nan\n", "NaN or infinite values in column"),
        ("time,path_id,a\n0,0,1.0\n0,1,2.0\n", "single time point"),
        ("time,path_id,a,b\n0,0,1.0\n1,0,2.0,3.0\n", "rows have"),
        ("time,path_id,a\n0,0,1\n1,0,2\n0,1,3\n", "same number of time points"),
        ("t,id,a\n0,0,1\n", "header must start with time,path_id"),
    ],
)
def test_malformed_csv_raises_clear_error(tmp_path, body, message):
    file = tmp_path / "bad.csv"
    file.write_text(body)
    with pytest.raises(ValueError, match=message):
        paths_io.read_paths(file)


def test_write_rejects_wrong_name_count(tmp_path):
    with pytest.raises(ValueError, match="2 variable names for 3 path channels"):
        paths_io.write_paths(
            tmp_path / "x.csv", np.zeros((2, 4, 3)), np.linspace(0, 1, 4), ["a", "b"]
        )
