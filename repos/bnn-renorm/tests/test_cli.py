"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json

import pytest

from bnn_renorm.cli import main


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    assert "bench" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fly"], "unknown command 'fly'"),
        (["train", "--preset", "huge"], "--preset must be one of"),
        (["train", "--temperature", "0"], "temperature must be > 0"),
        (["train", "--s2", "-1"], "s2 must be > 0"),
        (["train", "--burn-in", "5000"], "burn_in"),
        (["train", "--device", "tpu"], "device must be cpu or gpu"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_eval_without_run_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "--out", str(tmp_path)]) == 2
    assert "run `train" in capsys.readouterr().err


def test_readme_quick_start_commands_run(readme_run):
    """Every `bnn-renorm ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    folder, commands, codes = readme_run
    assert [c[:2] for c in commands] == [
        ["bnn-renorm", "train"],
        ["bnn-renorm", "eval"],
        ["bnn-renorm", "bench"],
    ]
    assert codes == [0, 0, 0]
    assert json.loads((folder / "results" / "quick.json").read_text())["paper"] == "bnn-renorm"
