"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import TINY

from trendy.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    assert "bench" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fly"], "unknown command 'fly'"),
        (["train", "--preset", "huge"], "--preset must be one of"),
        (["train", "--dt", "0.2"], "dt=0.2 is unstable"),
        (["train", "--measurement", "wavelets"], "measurement must be one of"),
        (["train", "--val-fraction", "0.95"], "val_fraction=0.95"),
        (["train", "--bands", "lizard"], "bands must name turing and/or hopf"),
        (["train", "--tune-sindy-components", "9"], "tune_sindy_components must lie in"),
        (["bench", "--data", "snaps.npz"], "bench simulates its own data"),
        (["train", "--preset"], "--preset needs a value"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_eval_without_run_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "--out", str(tmp_path)]) == 2
    assert "run `train" in capsys.readouterr().err


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `trendy ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^(?:\.venv/bin/)?(trendy .+)$", section, re.MULTILINE)
    commands = [shlex.split(c.split("#")[0]) for c in found]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = ["--seeds", "0", "--quiet"]
    for key, value in TINY.items():
        flag = "--" + key.replace("_", "-")
        shrink += [flag, *map(str, value)] if isinstance(value, tuple) else [flag, str(value)]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    doc = json.loads((tmp_path / "results" / "quick.json").read_text())
    assert doc["paper"] == "trendy" and len(doc["metrics"]) >= 2
    assert all(isinstance(c["holds"], bool) for c in doc["claims"]) and doc["performance"]
    assert (tmp_path / "results" / "figures" / "quick_summary.png").exists()
    assert {"grid", "validation_nmse"} <= set(doc["tuning"])
    assert all("interval" in c and "negative_control" in c for c in doc["claims"])
