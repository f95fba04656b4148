"""tpo's own command-line checks: a bad trees file fails before training, naming the file (the
shared contract, misuse listed in skeleton.toml and the README's Quick start, is tested by the
generated test_skeleton.py)."""

from __future__ import annotations

import pytest

from tpo.cli import main


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"prompt": "x 1 + 1 ?", "responses": [', "not valid JSON"),
        (
            '{"prompt": "x 1 + 1 ?", "responses": ["S 1 + 1 = 2 A 2", "S 9 A 9"], "scores": [1, 0]}',
            "unknown token '9'",
        ),
        ('["S 1 A 1"]', "expected a JSON object"),
    ],
)
def test_bad_trees_file_fails_before_training_naming_the_file(line, message, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line + "\n")
    out = tmp_path / "run"
    assert main(["train", "--trees", str(bad), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and str(bad) in err and err.count("\n") == 1
    assert not (out / "sft.safetensors").exists()  # nothing was trained
