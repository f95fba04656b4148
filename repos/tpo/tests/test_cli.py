"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tpo.cli import main

from .conftest import TINY

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--sft-steps", "0"], "sft_steps must be >= 1, got 0"),
        (["train", "--min-steps", "4", "--max-steps", "3"], "need 1 <= min_steps <= max_steps"),
        (["train", "--methods", "sft", "dpo"], "methods must include"),
        (["train", "--method", "ppo"], "method must be one of"),
        (["train", "--trees", "missing.jsonl", "--sft-steps", "1"], "missing.jsonl"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"prompt": "x 1 + 1 ?", "responses": [', "not valid JSON"),
        (
            '{"prompt": "x 1 + 1 ?", "responses": ["S 1 + 1 = 2 A 2", "S 9 A 9"], "scores": [1, 0]}',
            "unknown token '9'",
        ),
        ('["S 1 A 1"]', "expected a JSON object"),
    ],
)
def test_bad_trees_file_fails_before_training_naming_the_file(line, message, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line + "\n")
    out = tmp_path / "run"
    assert main(["train", "--trees", str(bad), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and str(bad) in err and err.count("\n") == 1
    assert not (out / "sft.safetensors").exists()  # nothing was trained


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `tpo ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(tpo .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = ["--quiet"]
    for key, value in TINY.items():
        if key != "quiet":
            values = value if isinstance(value, tuple) else (value,)
            shrink += [f"--{key.replace('_', '-')}", *map(str, values)]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["paper"] == "tpo"
    assert not (tmp_path / "results").exists()
