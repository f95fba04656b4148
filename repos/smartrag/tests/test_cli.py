"""smartrag's own commands (`data`, choice flags); the shared contract (misuse listed in
skeleton.toml, the README's Quick start) is tested by the generated test_skeleton.py."""

from __future__ import annotations

import json

import pytest

from smartrag.cli import main


def test_data_command_scores_user_files(tmp_path, capsys):
    qs, corpus = tmp_path / "q.jsonl", tmp_path / "c.jsonl"
    qs.write_text(json.dumps({"question": "where was ada born ?", "answer": "lima"}) + "\n")
    corpus.write_text(
        json.dumps({"title": "ada", "text": "ada was born in lima"}) + "\n"
        + json.dumps({"text": "bob likes the color red"}) + "\n"
    )  # fmt: skip
    assert main(["data", "--questions", str(qs), "--corpus", str(corpus), "--top-k", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"questions": 1, "documents": 2, "raw_query_hit_rate@1": 100.0}


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: ["--questions", str(d / "none.jsonl"), "--corpus", str(d / "c.jsonl")],
         "none.jsonl does not exist"),
        (lambda d: ["--questions", str(d / "bad.jsonl"), "--corpus", str(d / "c.jsonl")],
         "bad.jsonl:1: not valid JSON"),
        (lambda d: ["--questions", str(d / "bad.jsonl")], "data needs --questions FILE"),
    ],
)  # fmt: skip
def test_data_command_bad_files_are_one_line_errors(tmp_path, capsys, make, message):
    (tmp_path / "bad.jsonl").write_text("{oops\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"text": "a"}) + "\n")
    assert main(["data", *make(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bad_choice_flags_are_clear_errors(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--decision", "softmax"]) == 2
    assert "decision must be 'full' or 'pair', got 'softmax'" in capsys.readouterr().err
    assert main(["train", "--pretrain-format", "md"]) == 2
    assert "pretrain_format must be 'qa' or 'plain'" in capsys.readouterr().err
