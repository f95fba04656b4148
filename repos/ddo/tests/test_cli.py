"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import GRID_FLAGS, TINY

from ddo.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    assert "bench" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fly"], "unknown command 'fly'"),
        (["train", "--preset", "huge"], "--preset must be one of"),
        (["train", "--da-loops", "0"], "da_loops must be >= 1"),
        (["train", "--beta", "-1"], "beta must be > 0"),
        (["bench", "--objective", "ppo"], "objective must be one of"),
        (
            ["train", "--beta", "abc"],
            "Error parsing --beta: could not convert string to float: 'abc'",
        ),
        (["train", "--bogus", "1"], "Unrecognized options: --bogus"),
        (["train", "--da-schedule", "cubic"], "da_schedule must be one of"),
        (["train", "--hard-objective", "ppo"], "hard_objective must be one of"),
        (["bench", "--ddpo-betas", "0", "10"], "ddpo_betas must hold values > 0"),
        (["bench", "--seeds", "0", "1", "--val-seed", "1"], "val_seed 1 must differ"),
        (["train", "--preset"], "--preset needs a value"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err  # one line, no traceback


def test_eval_without_run_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "--out", str(tmp_path)]) == 2
    assert "run `train" in capsys.readouterr().err


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[1, 2]"])
def test_eval_of_a_corrupt_metrics_file_names_the_file(tmp_path, capsys, content):
    (tmp_path / "metrics.json").write_bytes(content)
    assert main(["eval", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "metrics.json") in err and len(err.strip().splitlines()) == 1


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `ddo ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(ddo .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()] + GRID_FLAGS
    shrink += ["--seeds", "0", "--quiet"]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert json.loads((tmp_path / "results" / "quick.json").read_text())["paper"] == "ddo"
