"""The command line beyond tests/test_skeleton.py: OFT-Sinkhorn's own misuse cases, DIMACS input
errors, the README quick start."""

from __future__ import annotations

import json
import re
import shlex
import warnings
from pathlib import Path

import pytest
import torch
from conftest import SHRINK

from oft_sinkhorn.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--generator", "grid"], "generator must be one of"),
        (["train", "--eps", "0.1", "0.3"], "eps must be positive and decreasing"),
        (["train", "--instance", "missing.min"], "missing.min"),
        (["train", "--solver", "newton"], "solver must be one of"),
        (["bench", "--families", "netgen", "grid"], "families must be a non-empty subset"),
        (["train", "--damping", "1.5"], "damping must lie in (-1, 1)"),
        (["train", "--node-share", "2"], "node_share must lie in [0, 1], got 2.0"),
        (["bench", "--preset", "paper", "--compare-n", "5"], "compare_n must be >= 10, got 5"),
        (["train", "--device", "warp"], "--device must be cpu, cuda, cuda:N or auto, got 'warp'"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed `train` may already have written runs/quick/config.json
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_missing_gpu_is_a_clear_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--preset", "full", "--device", "cuda"]) == 2
    assert "--device cuda: this machine has no CUDA device" in capsys.readouterr().err


def test_malformed_dimacs_exits_2_naming_the_line(tmp_path, capsys):
    (tmp_path / "bad.min").write_text("p min 2 1\nn 1 1\nn 2 -1\na 1 2 0 five 1\n")
    assert (
        main(["train", "--instance", str(tmp_path / "bad.min"), "--out", str(tmp_path / "run")])
        == 2
    )
    assert "bad.min:4:" in capsys.readouterr().err


def test_readme_quick_start_commands_run(tmp_path, monkeypatch):
    """Every `oft-sinkhorn ...` line of the README's Quick start, shrunk by extra flags, exits 0;
    the bench writes runs/quick/, never results/ unless asked to."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(oft-sinkhorn .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        assert main(argv[1:] + SHRINK) == 0, argv
    runs = tmp_path / "runs" / "quick"
    assert json.loads((runs / "quick.json").read_text())["paper"] == "oft-sinkhorn"
    assert (runs / "figures" / "gap_vs_eps.png").exists()
    assert not (tmp_path / "results").exists()


def test_readme_python_snippet_converges_without_warnings(capsys):
    """The README's Python block runs as printed, every stage reaches tol, nothing is warned."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(code, "README.md", "exec"), {})  # noqa: S102 -- the README is ours
    assert capsys.readouterr().out.startswith("True ")
