"""The command line beyond the generated tests/test_skeleton.py (which runs this project's misuse
cases and the README's Quick start from tests/skeleton.toml): a corrupt run config is named."""

from __future__ import annotations

import pytest

from ddo.cli import main


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"beta": -1}'])
def test_eval_of_a_corrupt_run_config_names_the_file(tmp_path, capsys, content):
    (tmp_path / "config.json").write_bytes(content)
    assert main(["eval", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "config.json") in err and len(err.strip().splitlines()) == 1
