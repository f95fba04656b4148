"""The command line: a missing Minari dataset is a clear error (the generic contract, LEQ's own
misuse cases and the README's Quick start, listed in tests/skeleton.toml, are in the generated
tests/test_skeleton.py)."""

from __future__ import annotations

from leq.cli import main


def test_missing_minari_dataset_is_a_clear_error(tmp_path, capsys):
    argv = ["train", "--dataset-path", str(tmp_path), "--dataset-id", "x/y-v0"]
    assert main(argv + ["--out", str(tmp_path / "run"), "--quiet"]) == 2
    assert "cannot read Minari dataset 'x/y-v0'" in capsys.readouterr().err
