"""genre's own command-line behaviour (tests/test_skeleton.py covers help, unknown commands and
presets, paths and devices, the misuse cases of skeleton.toml and the README's Quick start)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from conftest import TINY
from genre.cli import main


def test_wrong_format_file_through_the_cli_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "scores.csv"
    bad.write_text("id,score\n1,0.5\n")
    assert main(["train", "--dataset", "compas", "--data-path", str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scores.csv" in err and "lacks columns" in err
    schema = tmp_path / "schema.json"
    schema.write_text("[1, 2]")
    assert (
        main(["train", "--dataset", "csv", "--data-path", str(bad), "--schema-path", str(schema)])
        == 2
    )
    assert "must hold a JSON object" in capsys.readouterr().err


def test_resume_from_a_corrupt_checkpoint_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "pair_model.safetensors").write_bytes(b"\x00not a checkpoint")
    argv = ["train", "--resume", "--out", str(run), "--dataset", "moons", "--quiet"]
    assert main([*argv, "--rf-trees", "5", "--n-negatives", "5", "--methods", "GenRe"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pair_model.safetensors: corrupt checkpoint" in err


def test_readme_shrink_is_the_tiny_shrink():
    """skeleton.toml's [readme.shrink] (the README test's flags) is conftest's TINY, value for value."""
    settings = tomllib.loads((Path(__file__).parent / "skeleton.toml").read_text())
    as_lists = {k: list(v) if isinstance(v, tuple) else v for k, v in TINY.items()}
    assert settings["readme"]["shrink"] == as_lists
