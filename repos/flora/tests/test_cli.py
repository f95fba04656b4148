"""The command line: project-specific misuse exits 2 with a clear message, the README quick start
runs (tests/test_skeleton.py covers help, unknown commands and presets, paths and devices)."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import SHRINK

from flora.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--epochs", "0"], "epochs must be >= 1"),
        (["train", "--method", "lorax"], "method for task transfer must be one of"),
        (["bench", "--tune-rank", "3"], "tune_rank 3 must be 0 or one of budget_ranks"),
        (["train", "--data-dir", "no/such/folder"], "image folder no/such/folder has no class"),
        (
            ["train", "--backbones", "convnext", "--checkpoint", "no/such"],
            "checkpoint no/such is not",
        ),
        (["train", "--task", "structure", "--method", "full"], "method for task structure"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    """Refused before any work: nothing is written, not even runs/quick/config.json (these runs
    have no --out, so before this check they wrote into the current folder)."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_eval_of_a_run_with_a_wrong_weights_file_names_it(tiny, tmp_path, capsys):
    """A weights file from another method does not fit the rebuilt model: one line naming it."""
    from flora.train import train_and_evaluate

    args = ["--out", str(tmp_path / "run")]
    train_and_evaluate(dataclasses.replace(tiny, backbones=("cnn",)), tmp_path / "run")
    train_and_evaluate(
        dataclasses.replace(tiny, backbones=("cnn",), method="lora"), tmp_path / "lora"
    )
    (tmp_path / "lora" / "cnn_shift.safetensors").replace(
        tmp_path / "run" / "cnn_shift.safetensors"
    )
    assert main(["eval", *args]) == 2
    err = capsys.readouterr().err
    assert "cnn_shift.safetensors: does not fit" in err and err.count("\n") == 1


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `flora ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(flora .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = []
    for key, value in SHRINK.items():
        flag = "--" + key.replace("_", "-")
        values = value if isinstance(value, tuple) else () if value is True else (value,)
        shrink += [flag, *map(str, values)]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["paper"] == "flora"
    assert not (tmp_path / "results").exists()
