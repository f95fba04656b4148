"""The command line beyond tests/test_skeleton.py: this project's misuse cases exit 2 with a
clear message, and the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import GRID_FLAGS, TINY

from ddo.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
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
        (["bench", "--ddpo-betas", "0", "10"], "ddpo_betas must be > 0 for every entry"),
        (["train", "--target-mode", "6"], "target_mode must be in [0, 6)"),
        (["train", "--t-min", "6"], "need t_min < t_max"),
        (["bench", "--seeds", "0", "1", "--val-seed", "1"], "val_seed 1 must differ"),
        (["train", "--preset"], "--preset needs a value"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err  # one line, no traceback


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"beta": -1}'])
def test_eval_of_a_corrupt_run_config_names_the_file(tmp_path, capsys, content):
    (tmp_path / "config.json").write_bytes(content)
    assert main(["eval", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "config.json") in err and len(err.strip().splitlines()) == 1


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
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["paper"] == "ddo"
    assert not (tmp_path / "results").exists()
