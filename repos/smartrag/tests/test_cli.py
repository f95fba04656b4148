"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from smartrag.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    assert "bench" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fly"], "unknown command 'fly'"),
        (["train", "--preset", "huge"], "--preset must be one of"),
        (["train", "--quota", "-1"], "quota must be >= 0, got -1"),
        (["train", "--retriever", "bing"], "retriever must be 'bm25' or 'dense'"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_eval_without_run_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "--out", str(tmp_path)]) == 2
    assert "run `train" in capsys.readouterr().err


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `smartrag ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(smartrag .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = [
        *[
            "--n-entities",
            "12",
            "--n-values",
            "3",
            "--n-distractors",
            "4",
            "--n-layer",
            "1",
            "--d-model",
            "32",
            "--n-head",
            "2",
            "--pretrain-steps",
            "2",
            "--sft-steps",
            "2",
            "--lm-batch",
            "8",
            "--ppo-iterations",
            "1",
            "--ppo-batch",
            "8",
            "--ppo-minibatch",
            "8",
            "--seeds",
            "0",
            "--quiet",
            "--no-swap-retriever",
        ]
    ]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert json.loads((tmp_path / "results" / "quick.json").read_text())["paper"] == "smartrag"
