"""regent's own commands (`demos`); the shared contract (misuse listed in skeleton.toml, the README's
Quick start) is tested by the generated test_skeleton.py."""

from __future__ import annotations

import json

from regent.cli import main


def test_demos_command_writes_reads_and_rejects_junk(tmp_path, capsys):
    path = tmp_path / "d.npz"
    assert main(["demos", str(path), "--write", "grid"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["episodes"] == 5 and info["discrete_actions"] and info["p95_context"] > 0
    (tmp_path / "junk.npz").write_bytes(b"junk")
    assert main(["demos", str(tmp_path / "junk.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"error: {tmp_path / 'junk.npz'}: not an .npz archive of arrays obs, act, rew, episode"
    )
    assert main(["demos", str(path), "--write", "maze"]) == 2
    assert "--write needs a family" in capsys.readouterr().err
    for argv, message in (
        ([], "the following arguments are required: PATH"),
        ([str(path), "--write"], "expected one argument"),
        ([str(path), "extra"], "unrecognized arguments: extra"),
        ([str(tmp_path / "none.npz")], "no such file"),
    ):
        assert main(["demos", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err and message in err, err


def test_demos_help_is_help_not_a_file_name(capsys):
    assert main(["demos", "--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: regent demos" in out and "--write FAMILY" in out
