"""The command line: project-specific misuse exits 2 with a clear message (the generic cases are
in test_skeleton.py), the README quick start runs and bench writes runs/<preset>/, not results/."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from arith_heuristics.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--steps", "0"], "steps must be >= 1"),
        (["train", "--max-operand", "150"], "outside the vocabulary"),
        (["train", "--d-model", "30"], "d_model (30) must be divisible by n_head (4)"),
        (["train", "--first-heuristics-layer", "3"], "first_heuristics_layer must be in [0, 3)"),
        (["train", "--checkpoint", "no/such/model"], "checkpoint must be a local model folder"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_paper_preset_is_a_choice(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--preset", "paper", "--steps", "0"]) == 2
    assert "steps must be >= 1" in capsys.readouterr().err


def test_readme_quick_start_commands_run_and_bench_leaves_results_alone(
    tmp_path, monkeypatch, capsys
):
    """Every `arith-heuristics ...` line of the README's Quick start, shrunk by extra flags, exits
    0; the real (tiny) bench, run without --results-dir, writes runs/quick/quick.json and no
    results/ folder."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [
        shlex.split(c.split("#")[0])
        for c in re.findall(r"^(?:\.venv/bin/)?(arith-heuristics .+)$", section, re.MULTILINE)
    ]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = [
        "--max-operand",
        "10",
        "--n-numbers",
        "20",
        "--n-layer",
        "2",
        "--d-model",
        "16",
        "--n-head",
        "2",
        "--d-mlp",
        "32",
        "--steps",
        "4",
        "--n-checkpoints",
        "2",
        "--n-prompts",
        "10",
        "--faith-fracs",
        "0.015",
        "0.1",
        "0.5",
        "--knockout-counts",
        "1",
        "2",
        "--probe-prompts",
        "40",
        "--probe-epochs",
        "1",
        "--perf-prompts",
        "8",
        "--seeds",
        "0",
        "--quiet",
    ]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert any(argv[1] == "bench" for argv in commands)
    assert not (tmp_path / "results").exists()
    doc = json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())
    assert doc["paper"] == "arith-heuristics"
    assert (tmp_path / "runs" / "quick" / "figures" / "quick_analysis.png").exists()
