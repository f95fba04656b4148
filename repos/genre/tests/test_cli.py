"""The command line: project-specific misuse exits 2 with a clear message, the README quick start
runs (tests/test_skeleton.py covers help, unknown commands and presets, paths and devices)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import TINY

from genre.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--epochs", "0"], "epochs must be >= 1"),
        (["train", "--dataset", "mnist"], "dataset must be one of"),
        (["train", "--dataset", "csv"], "needs --data-path"),
        (["train", "--methods", "NNR", "REVISE"], "methods must include GenRe"),
        (["bench", "--bench-datasets", "mnist"], "dataset must be one of"),
        (["train", "--variant", "cvae"], "variant must be one of"),
        (["train", "--epochs", "abc"], "--epochs"),
        (["train", "--lof-fit", "test"], "lof_fit must be"),
        (["train", "--dataset", "compas", "--data-path", "no/such.csv"], "'no/such.csv' does not"),
        (["train", "--dataset", "adult", "--data-path", "no/adult.data"], "'no/adult.data' does"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a run that fails late must not leave runs/ in the repo
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_wrong_format_file_through_the_cli_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "scores.csv"
    bad.write_text("id,score\n1,0.5\n")
    assert main(["train", "--dataset", "compas", "--data-path", str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scores.csv" in err and "lacks columns" in err
    schema = tmp_path / "schema.json"
    schema.write_text("[1, 2]")
    assert (
        main(["train", "--dataset", "csv", "--data-path", str(bad), "--schema-path", str(schema)])
        == 2
    )
    assert "must hold a JSON object" in capsys.readouterr().err


def test_resume_from_a_corrupt_checkpoint_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "pair_model.safetensors").write_bytes(b"\x00not a checkpoint")
    argv = ["train", "--resume", "--out", str(run), "--dataset", "moons", "--quiet"]
    assert main([*argv, "--rf-trees", "5", "--n-negatives", "5", "--methods", "GenRe"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pair_model.safetensors: corrupt checkpoint" in err


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `genre ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(genre .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = ["--quiet"]
    for key, value in TINY.items():
        flag = f"--{key.replace('_', '-')}"
        if isinstance(value, tuple):
            shrink += [flag, *map(str, value)]
        elif key != "quiet":
            shrink.append(f"{flag}={value}")
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["paper"] == "genre"
    assert not (tmp_path / "results").exists()
