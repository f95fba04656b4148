"""The command line: LEQ's own misuse exits 2 with a clear message, eval re-evaluates the saved
actor, the README quick start runs (the generic contract is tests/test_skeleton.py)."""

from __future__ import annotations

import json

import pytest

from leq.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--tau", "1.5"], "tau must lie in (0, 1), got 1.5"),
        (["train", "--tau", "0"], "tau must lie in (0, 1), got 0.0"),
        (["train", "--horizon", "0"], "horizon must be >= 1, got 0"),
        (["train", "--env", "mars"], "env must be one of"),
        (["train", "--method", "SAC"], "unknown method 'SAC'"),
        (["train", "--dataset-path", "/nowhere"], "must be given together"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_missing_minari_dataset_is_a_clear_error(tmp_path, capsys):
    argv = ["train", "--dataset-path", str(tmp_path), "--dataset-id", "x/y-v0"]
    assert main(argv + ["--out", str(tmp_path / "run"), "--quiet"]) == 2
    assert "cannot read Minari dataset 'x/y-v0'" in capsys.readouterr().err


@pytest.mark.slow  # the README's train, eval and bench commands, shrunk (about 85 s loaded)
def test_readme_quick_start_commands_run(readme_run):
    folder, commands, codes = readme_run
    assert commands, "the README's Quick start names no command"
    assert codes == [0] * len(commands), list(zip(commands, codes))
    assert json.loads((folder / "runs" / "quick" / "quick.json").read_text())["paper"] == "leq"
