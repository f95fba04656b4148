"""The command line beyond the generated tests/test_skeleton.py (which runs DeGEM's own misuse
cases and the README's Quick start from tests/skeleton.toml): graph files, the presets."""

from __future__ import annotations

import json

import numpy as np
import pytest

from degem.cli import main, parse


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such graph file"), (b"plain text", "not a .npz graph file")],
)
def test_bad_graph_file_is_one_line_naming_the_file(tmp_path, capsys, content, message):
    path = tmp_path / "g.npz"
    if content is not None:
        path.write_bytes(content)
    assert main(["train", "--graph-file", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert message in err and "g.npz" in err and err.count("\n") == 1


def test_train_reads_a_graph_file_and_bench_refuses_one(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    n, rng = 60, np.random.default_rng(0)
    a = np.triu(rng.random((n, n)) < 0.1, 1).astype(np.float32)
    rows, cols = np.nonzero(a)
    path = tmp_path / "g.npz"
    np.savez(
        path, adj_data=np.ones(len(rows)), adj_indices=cols,
        adj_indptr=np.searchsorted(rows, np.arange(n + 1)), adj_shape=np.array([n, n]),
        attr_matrix=rng.normal(size=(n, 5)).astype(np.float32), labels=np.arange(n) % 3,
    )  # fmt: skip
    argv = ["--graph-file", str(path), "--epochs", "2", "--hidden", "8", "--energy-hidden", "4"]
    out = tmp_path / "run"
    assert main(["train", *argv, "--ood-classes", "2", "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "config.json").read_text())["n_classes"] == 3
    metrics = json.loads((out / "metrics.json").read_text())
    assert "Oracle/avg_auroc" not in metrics
    capsys.readouterr()
    assert main(["eval", "--out", str(out)]) == 0  # reloads the graph file and the models
    again = json.loads(capsys.readouterr().out)
    assert again["DeGEM/avg_auroc"] == metrics["DeGEM/avg_auroc"]
    assert main(["bench", *argv]) == 2
    assert "use `degem train --graph-file`" in capsys.readouterr().err


def test_every_preset_parses():
    for preset in ("quick", "paper", "full"):
        assert parse("train", ["--preset", preset]).name == preset
