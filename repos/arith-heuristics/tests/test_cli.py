"""The command line: the paper preset is a choice, and the README's Quick start runs the bench
(the shared contract, misuse listed in skeleton.toml and the Quick start itself, is tested by the
generated test_skeleton.py)."""

from __future__ import annotations

from arith_heuristics.cli import main


def test_paper_preset_is_a_choice(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--preset", "paper", "--steps", "0"]) == 2
    assert "steps must be >= 1" in capsys.readouterr().err


def test_readme_quick_start_runs_the_real_bench(readme_run):
    """The README's Quick start includes a (tiny) bench, so the generated test checks its
    runs/quick/quick.json, its figure and that no results/ folder was written."""
    assert any(argv[1] == "bench" for argv in readme_run.commands)
