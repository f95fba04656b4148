"""The command line beyond tests/test_skeleton.py (which runs the misuse cases of skeleton.toml and
the README's Quick start): `discover` and `simulate` on a user's file, the Quick start's discover."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sde_causal import paths_io, sde
from sde_causal.cli import main


def _write_edge_data(path: Path, n: int = 80) -> None:
    graph = np.array([[False, True, False], [False, False, False], [False, False, False]])
    model = sde.SDEModel("linear", np.zeros(3), 2.5 * graph, np.zeros((3, 3)))
    paths, times = sde.observe(sde.simulate(model, n, 200, seed=3), 11, seed=3)
    paths_io.write_paths(path, paths, times, ["rain", "flow", "noise"])


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_discover_reads_a_file_and_writes_graph_and_pvalues(tmp_path, suffix, capsys):
    data = tmp_path / f"paths{suffix}"
    _write_edge_data(data)
    out = tmp_path / "out"
    assert main(["discover", "--data", str(data), "--out", str(out), "--n-perm", "99"]) == 0
    printed = json.loads(capsys.readouterr().out)
    on_disk = json.loads((out / "discovery.json").read_text())
    assert printed == on_disk and on_disk["variables"] == ["rain", "flow", "noise"]
    edges = {(e["from"], e["to"]) for e in on_disk["edges"]}
    assert ("rain", "flow") in edges and ("flow", "rain") not in edges
    assert set(on_disk["p_max"]) == {
        f"{a}->{b}" for a in on_disk["variables"] for b in on_disk["variables"] if a != b
    }
    assert on_disk["cut"] == 0.5 and on_disk["horizon"] == 0.5
    assert (out / "graph.png").stat().st_size > 1000


@pytest.mark.parametrize(
    ("body", "extra", "message"),
    [
        (None, [], "no such file"),
        ("", [], "empty file"),
        ("time,path_id,a\n0,0,1\n0.5,0,x\n", [], "non-numeric value in column 'a' on line 3"),
        ("time,path_id,a,b\n0,0,1\n", [], "rows have [3] fields"),
        (
            "time,path_id,a,b\n" + "".join(f"{t},{k},1,2\n" for k in range(3) for t in (0, 1)),
            [],
            "need >= 8 paths",
        ),
        ("edge", ["--cut", "1.5"], "s < s + h"),
        ("edge", ["--alpha", "0"], "--alpha must be in (0, 1), got 0.0"),
        ("edge", ["--lags", "10"], "--lags / --tau-max must be below 10"),
        ("edge", ["--method", "ccm"], "invalid choice: 'ccm'"),
    ],
)
def test_discover_bad_input_is_one_line_naming_it(tmp_path, body, extra, message, capsys):
    data = tmp_path / "user.csv"
    if body == "edge":
        _write_edge_data(data)
    elif body is not None:
        data.write_text(body)
    assert main(["discover", "--data", str(data), "--out", str(tmp_path / "o"), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    if body not in ("edge",):
        assert "user.csv" in err


def test_discover_reads_array_npz_and_runs_every_method(tmp_path, capsys):
    """An .npz holding paths (paths, times, variables): the same edge from every method."""
    graph = np.array([[False, True, False], [False, False, False], [False, False, False]])
    model = sde.SDEModel("linear", np.zeros(3), 2.5 * graph, np.zeros((3, 3)))
    paths, times = sde.observe(sde.simulate(model, 60, 200, seed=3), 11, seed=3)
    data = tmp_path / "arr.npz"
    np.savez(data, paths=paths, times=times, names=np.array(["rain", "flow", "noise"]))
    out = tmp_path / "o"
    argv = ["discover", "--data", str(data), "--out", str(out), "--n-perm", "49"]
    assert main([*argv, "--method", "all"]) == 0
    doc = json.loads((out / "discovery.json").read_text())
    assert doc["variables"] == ["rain", "flow", "noise"] and doc["n_paths"] == 60
    assert list(doc["methods"]) == ["sigker", "pcmci", "granger"] and doc["method"] == "sigker"
    for m, res in doc["methods"].items():
        edges = {(e["from"], e["to"]) for e in res["edges"]}
        assert ("rain", "flow") in edges and ("flow", "rain") not in edges, m
        assert res["p"]["rain->flow"] < 0.05 < res["p"]["flow->rain"], m
    assert doc["edges"] == doc["methods"]["sigker"]["edges"]
    assert (out / "graph-pcmci.png").exists() and (out / "graph-granger.png").exists()
    # the array form equals the tidy form of the same paths; one method alone
    tidy = tmp_path / "tidy.csv"
    paths_io.write_paths(tidy, paths, times, ["rain", "flow", "noise"])
    got = paths_io.read_paths(data)
    want = paths_io.read_paths(tidy)
    np.testing.assert_allclose(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1])
    capsys.readouterr()
    assert main([*argv, "--method", "granger", "--quiet"]) == 0
    only = json.loads(capsys.readouterr().out)
    assert list(only["methods"]) == ["granger"] and only["method"] == "granger"
    assert main([*argv, "--statistic", "sdcit", "--quiet"]) == 0
    sd = json.loads(capsys.readouterr().out)
    # SDCIT-style statistic: weaker at n = 60 (max p 0.1 over conditioning sets with 49
    # permutations, measured), but the edge stays well ahead of its reverse (0.82)
    assert sd["p_max"]["rain->flow"] <= 0.1 and sd["p_max"]["flow->rain"] > 0.5
    # without times or names: evenly spaced times on [0, 1], names X0..
    bare = tmp_path / "bare.npz"
    np.savez(bare, paths=paths)
    _, t2, n2 = paths_io.read_paths(bare)
    assert n2 == ["X0", "X1", "X2"] and t2.shape == (60, 11) and t2[0, -1] == 1.0


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"paths": np.zeros((10, 5))}, "'paths' must have shape (paths, times >= 2, variables)"),
        ({"paths": np.zeros((10, 5, 2)), "times": np.zeros(4)}, "'times' must have shape (5,)"),
        ({"paths": np.zeros((10, 5, 2)), "names": np.array(["a"])}, "'names' must hold 2"),
        ({"paths": np.zeros((10, 5, 2)), "times": np.ones(5)}, "must increase strictly"),
        ({"paths": np.full((10, 5, 2), np.nan)}, "NaN or infinite values in 'paths'"),
        ({"paths": np.zeros((10, 5, 2)), "extra": np.zeros(1)}, "unknown array(s) ['extra']"),
        ({"values": np.zeros(3)}, "needs an array 'paths' (paths, times, variables)"),
    ],
)
def test_discover_bad_array_npz_is_one_line(tmp_path, arrays, message, capsys):
    data = tmp_path / "mine.npz"
    np.savez(data, **arrays)
    assert main(["discover", "--data", str(data), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "mine.npz" in err and len(err.splitlines()) == 1, err


def test_discover_rejects_other_suffixes_and_broken_npz(tmp_path, capsys):
    bad = tmp_path / "paths.txt"
    bad.write_text("time,path_id,a\n")
    assert main(["discover", "--data", str(bad)]) == 2
    assert "file must end in .csv or .npz" in capsys.readouterr().err
    broken = tmp_path / "paths.npz"
    broken.write_bytes(b"not a zip")
    assert main(["discover", "--data", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "paths.npz: not an .npz archive" in err and len(err.strip().splitlines()) == 1


def test_readme_quick_start_discovers_on_the_simulated_file(readme_run):
    """The Quick start (run once by the generated `readme_run` fixture; test_skeleton.py checks its
    exit codes, runs/quick/ and its figure) includes `discover` on the file `simulate` wrote."""
    assert any(c[1] == "discover" for c in readme_run.commands)
    assert readme_run.codes == [0] * len(readme_run.commands), readme_run.commands
    assert readme_run.results()["paper"] == "sde-causal"


def test_unwritable_output_and_directory_input_are_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["simulate", "--out", str(blocker / "sub" / "paths.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: cannot write") and len(err.splitlines()) == 1, err
    assert main(["discover", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "a directory, not a file" in err and len(err.splitlines()) == 1, err


def test_simulate_prints_the_power_caveat_where_the_test_is_weak(tmp_path, capsys):
    """Issue 65: a diffusion-only demo says what power to expect at its n; linear says nothing."""
    out = tmp_path / "d.csv"
    assert main(["simulate", "--family", "diffusion", "--n-paths", "20", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["power_note"].startswith("n = 20 paths; diffusion-only edges are weak")
    assert "note: n = 20 paths" in captured.err
    assert main(["simulate", "--n-paths", "20", "--out", str(tmp_path / "l.csv")]) == 0
    assert "power_note" not in json.loads(capsys.readouterr().out)
