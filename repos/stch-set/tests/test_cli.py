"""The command line's own checks: the user's problems (files, entry points, misuse that writes runs/
first), read-only folders, the Quick start's bench of the user's problem; the generic contract
(help, unknown commands, bounds, paths, corrupt runs, the misuse cases of skeleton.toml, the
README's Quick start) is test_skeleton.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stch_set.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--problem-file", "missing.csv"], "problem file missing.csv does not exist"),
        (["train", "--problem-entry", "nope_module:f"], "'nope_module:f' cannot be imported"),
    ],
)
def test_missing_user_problem_exits_2_with_one_line_message(
    argv, message, capsys, tmp_path, monkeypatch
):
    # not in skeleton.toml: the generated check found runs/ written in the folder before the error
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and err.startswith("error: ")


def test_bad_csv_through_the_cli_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,3\n4,5\n")
    assert main(["train", "--problem-file", str(bad), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert f"problem file {bad}: data row 2 has 2 columns" in err and err.count("\n") == 1
    few = tmp_path / "few.csv"
    few.write_text("1,2,3\n4,5,6\n")
    assert main(["train", "--problem-file", str(few), "--out", str(tmp_path / "r")]) == 2
    assert "K=5 solutions for m=2 objectives" in capsys.readouterr().err


def test_user_problems_train_from_the_cli(tmp_path, monkeypatch, capsys):
    (tmp_path / "objs.py").write_text(
        "import torch\ncentres = torch.linspace(-2, 2, 12)[:, None] * torch.ones(1, 3)\n"
        "def f(x):\n    return ((x[:, None, :] - centres) ** 2).sum(-1)\n"
    )
    (tmp_path / "objs.csv").write_text("a1,a2,b\n" + "\n".join(f"1,{i},{i}" for i in range(8)))
    monkeypatch.syspath_prepend(str(tmp_path))
    for flags in (
        ["--problem-entry", "objs:f", "--n-dim", "3"],
        ["--problem-file", str(tmp_path / "objs.csv")],
    ):
        out = str(tmp_path / flags[1].replace("/", "_"))
        assert main(["train", *flags, "--k", "3", "--steps", "50", "--out", out]) == 0
        metrics = json.loads(capsys.readouterr().out)
        assert metrics["worst"] >= metrics["average"] >= 0


def test_train_into_a_read_only_folder_is_one_line(tmp_path, monkeypatch, capsys):
    """Was an OSError traceback (`train --out /ro/run`): the folder is checked before any work.
    The read-only folder is simulated, as root may write into any folder."""
    locked = tmp_path / "ro"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != locked and real_access(p, mode))
    assert main(["train", "--out", str(locked / "run")]) == 2
    err = capsys.readouterr().err
    assert f"--out {locked / 'run'}: {locked} is not writable" in err and err.count("\n") == 1
    assert not (locked / "run").exists()


def test_readme_quick_start_benches_the_users_problem(readme_run):
    """The Quick start (run once by the `readme_run` fixture of tests/conftest.py, with the example
    objectives.csv and mymodule.py the README describes; test_skeleton.py checks its exit codes,
    runs/quick/ and no results/) benches the user's objectives into --results-dir runs/mine-bench."""
    assert readme_run.codes == [0] * len(readme_run.commands), readme_run.commands
    assert readme_run.results()["paper"] == "stch-set"
    mine = json.loads((readme_run.folder / "runs/mine-bench/quick.json").read_text())
    assert "user/worst" in mine["metrics"]["STCH-Set"]
