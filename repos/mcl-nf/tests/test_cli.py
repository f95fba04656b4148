"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from mcl_nf.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    assert "bench" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fly"], "unknown command 'fly'"),
        (["train", "--preset", "huge"], "--preset must be one of"),
        (["train", "--inner-lr", "0"], "inner_lr must be > 0"),
        (["train", "--meta-lr", "-1e-4"], "meta_lr must be > 0"),
        (["train", "--signal", "lidar"], "signal must be one of"),
        (["train", "--signal", "nerf", "--nerf-samples", "0"], "nerf_samples must be >= 1"),
        (["train", "--video-frames", "6"], "video_frames 6 does not split"),
        (["bench", "--bench-signals", "image", "lidar"], "signal must be one of"),
        (["train", "--audio-length", "30", "--time-segments", "4"], "does not split"),
        (["train", "--image-size", "30", "--grid", "4"], "does not split into grid=4"),
        (["train", "--crop-side", "16"], "crop_side 16 must be >= image_size 32"),
        (["train", "--image-folder", "nowhere/at/all"], "does not exist"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_eval_without_run_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "--out", str(tmp_path)]) == 2
    assert "run `train" in capsys.readouterr().err


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `mcl-nf ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(mcl-nf .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = ["--image-size", "8", "--audio-length", "32", "--hidden", "8", "--single-hidden", "16"]
    shrink += ["--meta-steps", "2"]
    shrink += [
        "--meta-batch",
        "2",
        "--n-test",
        "2",
        "--eval-steps",
        "1",
        "2",
        "--seeds",
        "0",
        "--quiet",
    ]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert json.loads((tmp_path / "results" / "quick.json").read_text())["paper"] == "mcl-nf"
