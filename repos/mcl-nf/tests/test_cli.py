"""mcl-nf's own command-line checks: the photos command and a missing image folder (one clear line,
exit 2); the shared contract (misuse listed in skeleton.toml, the README's Quick start) is tested by
the generated test_skeleton.py."""

from __future__ import annotations

import json
from pathlib import Path

from mcl_nf.cli import main


def test_missing_image_folder_exits_2_with_one_line(capsys, tmp_path, monkeypatch):
    # not in skeleton.toml: the generated check found runs/ written in the folder before the error
    monkeypatch.chdir(tmp_path)  # a run that fails on its data has written config.json already
    assert main(["train", "--image-folder", "nowhere/at/all"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and err.startswith("error: ") and err.count("\n") == 1


def test_photos_writes_pngs_and_its_misuse_is_one_line(tmp_path, capsys):
    assert main(["photos", "--out", str(tmp_path / "p")]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written and all(p.endswith(".png") and Path(p).exists() for p in written)
    assert main(["photos", "--help"]) == 0
    assert "--out DIR" in capsys.readouterr().out
    for argv in (["photos", "--frames", "3"], ["photos", "--out", str(Path(written[0]) / "x")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
