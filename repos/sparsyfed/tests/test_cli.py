"""The command line's project-specific misuse (one clear line, exit 2) and the README quick start;
the generic contract (help, unknown commands, bounds, paths, corrupt runs) is test_skeleton.py."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from sparsyfed.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--sparsity", "1.2"], "sparsity must lie in [0, 1), got 1.2"),
        (["train", "--beta", "0"], "beta must be > 0"),
        (["bench", "--bench-sparsities", "0.9", "1.0"], "bench_sparsities must lie in [0, 1)"),
        (["train", "--clients-per-round", "30"], "clients_per_round must be in [1, n_clients=20]"),
        (["train", "--method", "zerofl"], "method must be one of"),
        (["train", "--dataset", "cifar10"], "dataset cifar10 needs --data-dir"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("error: ") and err.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_garbage_cifar_file_is_one_line_naming_the_file(tmp_path, capsys):
    from .test_data import write_tiny_cifar

    write_tiny_cifar(tmp_path / "cifar")
    (tmp_path / "cifar" / "test_batch").write_bytes(b"\x00garbage")
    argv = ["train", "--dataset", "cifar10", "--data-dir", str(tmp_path / "cifar")]
    assert main([*argv, "--arch", "cifar_cnn_gn", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "test_batch is not a CIFAR-10 python batch" in err and err.count("\n") == 1


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
    assert json.loads((tmp_path / "runs/quick/quick.json").read_text())["paper"] == "sparsyfed"
    assert not (tmp_path / "results").exists()  # the committed results/ only on request
