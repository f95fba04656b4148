"""The command line: help, misuse exits 2 with a clear message, the README quick start runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from smartrag.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--quota", "-1"], "quota must be >= 0, got -1"),
        (["train", "--d-model", "30", "--n-head", "4"], "d_model (30) must be divisible"),
        (["train", "--retriever", "bing"], "retriever must be 'bm25' or 'dense'"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `smartrag ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(smartrag .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = [
        *[
            "--n-entities",
            "12",
            "--n-values",
            "3",
            "--n-distractors",
            "4",
            "--n-layer",
            "1",
            "--d-model",
            "32",
            "--n-head",
            "2",
            "--pretrain-steps",
            "2",
            "--sft-steps",
            "2",
            "--lm-batch",
            "8",
            "--ppo-iterations",
            "1",
            "--ppo-batch",
            "8",
            "--ppo-minibatch",
            "8",
            "--rewriter-samples",
            "2",
            "--rewriter-steps",
            "2",
            "--seeds",
            "0",
            "--quiet",
            "--no-swap-retriever",
        ]
    ]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert (
        json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["paper"] == "smartrag"
    )
    assert not (tmp_path / "results").exists()


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
