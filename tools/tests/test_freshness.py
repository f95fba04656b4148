"""check.py's fresh-results rule on a real git history in a fixture tree."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from check import main
from conftest import good_results

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root, *args) -> str:
    env = {**os.environ, **GIT_ENV}
    out = subprocess.run(
        ["git", *args], check=False, cwd=root, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def commit_all(root, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "--short", "HEAD")


def write_results(root, name: str, commit: str | None, mode: str = "quick") -> None:
    data = good_results("good")
    data["git_commit"] = commit
    data["mode"] = mode
    (root / "repos" / "good" / "results" / name).write_text(json.dumps(data))


@pytest.fixture
def history(tree):
    git(tree, "init", "-q", "-b", "main")
    code = commit_all(tree, "code")
    return tree, code


def test_results_written_at_the_code_commit_are_fresh(history, capsys):
    tree, code = history
    write_results(tree, "quick.json", code)
    commit_all(tree, "results")
    (tree / "README.md").write_text((tree / "README.md").read_text() + "\ndocs only\n")
    commit_all(tree, "a later commit outside src/ keeps the results fresh")
    assert main(["--root", str(tree), "--paper", "good"]) == 0, capsys.readouterr().out


def test_src_change_after_the_results_makes_them_stale(history, capsys):
    tree, code = history
    write_results(tree, "quick.json", code)
    commit_all(tree, "results")
    (tree / "repos" / "good" / "src" / "good" / "train.py").write_text("x = 1\n")
    later = commit_all(tree, "change the method")
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    out = capsys.readouterr().out
    assert f"stale: written at {code}, but {later}" in out


def test_commit_not_on_this_history_is_flagged(history, capsys):
    tree, _ = history
    write_results(tree, "quick.json", "deadbeef")
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    assert "git_commit deadbeef is not a commit of this repository" in capsys.readouterr().out
    git(tree, "checkout", "-q", "-b", "side")
    (tree / "side.txt").write_text("x")
    side = commit_all(tree, "side branch")
    git(tree, "checkout", "-q", "main")
    write_results(tree, "quick.json", side)
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    assert "is not an ancestor of HEAD" in capsys.readouterr().out


def test_results_of_uncommitted_code_are_flagged(history, capsys):
    tree, code = history
    write_results(tree, "quick.json", code + "+dirty")
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    assert "uncommitted changes when the run started" in capsys.readouterr().out


def test_paper_json_is_checked_for_schema_and_freshness(history, capsys):
    tree, code = history
    write_results(tree, "quick.json", code)
    write_results(tree, "paper.json", code, mode="quick")
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    assert "paper.json: mode is 'quick', expected 'paper'" in capsys.readouterr().out
    write_results(tree, "paper.json", None, mode="paper")
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    assert "paper.json: no git_commit" in capsys.readouterr().out
    write_results(tree, "paper.json", code, mode="paper")
    assert main(["--root", str(tree), "--paper", "good"]) == 0
