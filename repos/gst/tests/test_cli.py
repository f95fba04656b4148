"""The command line: every flag has help, eval of a folder without runs is one line (the generated
tests/test_skeleton.py covers help, unknown commands and presets, paths and devices, and the
misuse cases and README Quick start of tests/skeleton.toml)."""

from __future__ import annotations

from gst.cli import main


def test_every_flag_has_help(capsys):
    assert main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--image-size", "--camera-codes", "--top-k", "--threads", "--methods"):
        assert flag in out


def test_eval_of_a_folder_without_method_runs_is_one_line(tmp_path, capsys):
    (tmp_path / "other").mkdir()
    assert main(["eval", "--out", str(tmp_path), "--methods", "gst", "pose_only"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path}: holds no run of ['gst', 'pose_only']" in err
