"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from regent.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--steps", "0"], "steps must be >= 1, got 0"),
        (["train", "--d-model", "30", "--n-heads", "4"], "d_model (30) must be divisible"),
        (["train", "--families", "maze"], "families must be a non-empty subset"),
        (["train", "--ablation-sizes", "30"], "ablation_sizes must lie in 1..n_retrieved=19"),
        (["train", "--regime", "medium"], "regime must be one of"),
        (["train", "--normaliser", "p99"], "normaliser must be one of"),
        (["train", "--action-vocab", "2"], "action_vocab must be 0 or >= 4"),
        (["train", "--ablation-demos", "7"], "ablation_demos (7) must be one of demo_counts"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_demos_command_writes_reads_and_rejects_junk(tmp_path, capsys):
    path = tmp_path / "d.npz"
    assert main(["demos", str(path), "--write", "grid"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["episodes"] == 5 and info["discrete_actions"] and info["p95_context"] > 0
    (tmp_path / "junk.npz").write_bytes(b"junk")
    assert main(["demos", str(tmp_path / "junk.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"error: {tmp_path / 'junk.npz'}: not an .npz archive of arrays obs, act, rew, episode"
    )
    assert main(["demos", str(path), "--write", "maze"]) == 2
    assert "--write needs a family" in capsys.readouterr().err
    for argv, message in (
        ([], "the following arguments are required: PATH"),
        ([str(path), "--write"], "expected one argument"),
        ([str(path), "extra"], "unrecognized arguments: extra"),
        ([str(tmp_path / "none.npz")], "no such file"),
    ):
        assert main(["demos", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err and message in err, err


def test_demos_help_is_help_not_a_file_name(capsys):
    assert main(["demos", "--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: regent demos" in out and "--write FAMILY" in out


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `regent ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(regent .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = [
        "--seeds",
        "0",
        "--quiet",
        "--n-train-tasks",
        "2",
        "--n-test-tasks",
        "1",
        "--train-demos",
        "3",
        "--n-retrieved",
        "3",
        "--d-model",
        "16",
        "--n-layers",
        "1",
        "--steps",
        "2",
        "--bc-steps",
        "2",
        "--mtbc-steps",
        "2",
        "--demo-counts",
        "1",
        "--eval-episodes",
        "2",
        "--ablation-sizes",
        "1",
        "3",
        "--ablation-demos",
        "1",
    ]
    for argv in commands:
        extra = [] if argv[1] == "demos" else shrink  # `demos` takes no training flags
        assert main(argv[1:] + extra) == 0, argv
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["paper"] == "regent"
    assert not (tmp_path / "results").exists()
