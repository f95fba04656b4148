"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from sparsyfed.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    assert "bench" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fly"], "unknown command 'fly'"),
        (["train", "--preset", "huge"], "--preset must be one of"),
        (["train", "--sparsity", "1.2"], "sparsity must be in [0, 1)"),
        (["train", "--beta", "0"], "beta must be > 0"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_garbage_cifar_file_is_one_line_naming_the_file(tmp_path, capsys):
    from .test_data import write_tiny_cifar

    write_tiny_cifar(tmp_path / "cifar")
    (tmp_path / "cifar" / "test_batch").write_bytes(b"\x00garbage")
    argv = ["train", "--dataset", "cifar10", "--data-dir", str(tmp_path / "cifar")]
    assert main([*argv, "--arch", "cifar_cnn_gn", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "test_batch is not a CIFAR-10 python batch" in err and err.count("\n") == 1


def test_eval_without_run_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "--out", str(tmp_path)]) == 2
    assert "run `train" in capsys.readouterr().err


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `sparsyfed ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(sparsyfed .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = ["--rounds", "1", "--n-clients", "4", "--clients-per-round", "2", "--seeds", "0"]
    shrink += ["--flower-rounds", "0", "--quiet"]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert json.loads((tmp_path / "results" / "quick.json").read_text())["paper"] == "sparsyfed"
