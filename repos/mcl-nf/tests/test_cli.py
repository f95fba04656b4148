"""The command line's project-specific misuse (one clear line, exit 2), the photos command and the
README quick start; the generic contract is test_skeleton.py."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from mcl_nf.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--inner-lr", "0"], "inner_lr must be > 0, got 0.0"),
        (["train", "--eval-steps", "1", "0"], "eval_steps must be >= 1 for every entry"),
        (["train", "--test-points", "-1"], "test_points must be >= 0"),
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
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a run that fails on its data has written config.json already
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("error: ") and err.count("\n") == 1


def test_photos_writes_pngs_and_its_misuse_is_one_line(tmp_path, capsys):
    assert main(["photos", "--out", str(tmp_path / "p")]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written and all(p.endswith(".png") and Path(p).exists() for p in written)
    assert main(["photos", "--help"]) == 0
    assert "--out DIR" in capsys.readouterr().out
    for argv in (["photos", "--frames", "3"], ["photos", "--out", str(Path(written[0]) / "x")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err


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
        flags = [] if argv[1] == "photos" else shrink  # photos has only --out
        assert main(argv[1:] + flags) == 0, argv
    assert json.loads((tmp_path / "runs/quick/quick.json").read_text())["paper"] == "mcl-nf"
    assert not (tmp_path / "results").exists()  # the committed results/ only on request
