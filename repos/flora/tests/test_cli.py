"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import SHRINK

from flora.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    assert "bench" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fly"], "unknown command 'fly'"),
        (["train", "--preset", "huge"], "--preset must be one of"),
        (["train", "--epochs", "0"], "epochs must be >= 1"),
        (["train", "--method", "lorax"], "method for task transfer must be one of"),
        (["bench", "--tune-rank", "3"], "tune_rank 3 must be 0 or one of budget_ranks"),
        (["train", "--data-dir", "no/such/folder"], "image folder no/such/folder has no class"),
        (
            ["train", "--backbones", "convnext", "--checkpoint", "no/such"],
            "checkpoint no/such is not",
        ),
        (["train", "--task", "structure", "--method", "full"], "method for task structure"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_eval_without_run_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "--out", str(tmp_path)]) == 2
    assert "run `train" in capsys.readouterr().err


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `flora ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(flora .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = []
    for key, value in SHRINK.items():
        flag = "--" + key.replace("_", "-")
        values = value if isinstance(value, tuple) else () if value is True else (value,)
        shrink += [flag, *map(str, values)]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert json.loads((tmp_path / "results" / "quick.json").read_text())["paper"] == "flora"
