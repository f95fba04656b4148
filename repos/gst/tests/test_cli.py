"""The command line: project-specific misuse exits 2 with a clear message, the README quick start
runs (tests/test_skeleton.py covers help, unknown commands and presets, paths and devices)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import TINY

from gst.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def shrink_flags() -> list[str]:
    flags = []
    for k, v in TINY.items():
        if k == "quiet":
            flags.append("--quiet")
        elif k == "seeds":
            flags += ["--seeds", *map(str, v)]
        else:
            flags += [f"--{k.replace('_', '-')}", str(v)]
    return flags


def test_every_flag_has_help(capsys):
    assert main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--image-size", "--camera-codes", "--top-k", "--threads", "--methods"):
        assert flag in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--steps", "0"], "steps must be >= 1"),
        (["train", "--grid", "5"], "grid 5 must divide image_size 24"),
        (["bench", "--methods", "gst", "magic"], "methods must be a non-empty subset"),
        (["train", "--tokenizer", "pixels"], "tokenizer must be"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_eval_of_a_folder_without_method_runs_is_one_line(tmp_path, capsys):
    (tmp_path / "other").mkdir()
    assert main(["eval", "--out", str(tmp_path), "--methods", "gst", "pose_only"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path}: holds no run of ['gst', 'pose_only']" in err


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `gst ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(gst .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        assert main(argv[1:] + shrink_flags()) == 0, argv
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["paper"] == "gst"
    assert not (tmp_path / "results").exists()
