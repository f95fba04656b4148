"""The project's own command-line behaviour (the shared contract is in test_skeleton.py: usage,
help, misuse listed in skeleton.toml, the README's Quick start, output paths, corrupt files)."""

from __future__ import annotations

from __package__.cli import main


def test_train_then_eval_reads_the_saved_run(tmp_path, capsys):
    run = tmp_path / "run"
    flags = ["--n-samples", "16", "--dim", "2", "--steps", "2", "--seeds", "0", "--quiet"]
    assert main(["train", "--out", str(run), *flags]) == 0
    assert main(["eval", "--out", str(run)]) == 0
    assert capsys.readouterr().out
