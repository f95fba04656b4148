"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from arith_heuristics.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    assert "bench" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fly"], "unknown command 'fly'"),
        (["train", "--preset", "huge"], "--preset must be one of"),
        (["train", "--steps", "0"], "steps must be >= 1"),
        (["train", "--max-operand", "150"], "outside the vocabulary"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_help_of_out_names_only_files_that_are_written(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    assert "heuristics.json" in out and "paper" in out


def test_paper_preset_is_a_choice(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--preset", "paper", "--steps", "0"]) == 2
    assert "steps must be >= 1" in capsys.readouterr().err


def test_eval_without_run_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "--out", str(tmp_path)]) == 2
    assert "run `train" in capsys.readouterr().err


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `arith-heuristics ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [
        shlex.split(c)
        for c in re.findall(r"^(?:\.venv/bin/)?(arith-heuristics .+)$", section, re.MULTILINE)
    ]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = [
        "--max-operand",
        "10",
        "--n-numbers",
        "20",
        "--n-layer",
        "2",
        "--d-model",
        "16",
        "--n-head",
        "2",
        "--d-mlp",
        "32",
        "--steps",
        "4",
        "--n-checkpoints",
        "2",
        "--n-prompts",
        "10",
        "--faith-fracs",
        "0.1",
        "0.5",
        "--knockout-counts",
        "1",
        "2",
        "--probe-prompts",
        "40",
        "--probe-epochs",
        "1",
        "--perf-prompts",
        "8",
        "--seeds",
        "0",
        "--quiet",
    ]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert (
        json.loads((tmp_path / "results" / "quick.json").read_text())["paper"] == "arith-heuristics"
    )
