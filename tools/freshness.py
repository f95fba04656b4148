"""Is a results file written by the committed code? (CONVENTIONS.md section 8, "Fresh results".)

A results file names the commit it was written at (`git_commit`). It is fresh when that commit is
an ancestor of HEAD (the code was committed, on this history) and no later commit changed the
project's src/ (the code that wrote it is the code that is there now). Outside a git checkout, or in
a shallow clone that lacks the commit, nothing can be said: the check reports that once and passes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=False, timeout=60
    )


def in_git_checkout(root: Path) -> bool:
    try:
        return git(root, "rev-parse", "--is-inside-work-tree").stdout.strip() == "true"
    except (OSError, subprocess.SubprocessError):
        return False


def is_ancestor(root: Path, older: str, newer: str) -> bool | None:
    """True/False, or None when git does not know one of the commits."""
    code = git(root, "merge-base", "--is-ancestor", older, newer).returncode
    return {0: True, 1: False}.get(code)


def last_change(root: Path, rel_path: str) -> str | None:
    """The newest commit reachable from HEAD that touched rel_path (None if none did)."""
    out = git(root, "log", "-1", "--format=%H", "HEAD", "--", rel_path).stdout.strip()
    return out or None


def freshness_problems(root: Path, project: str, label: str, commit: str | None) -> list[str]:
    """Problems with a results file at `label`, written at `commit`, for the project at `project`.

    `project` is the project's path relative to root (e.g. "repos/leq").
    """
    if not in_git_checkout(root):
        return []
    if not commit:
        return [
            f"{label}: no git_commit (results must name the commit of the code that wrote them)"
        ]
    if commit.endswith("+dirty"):
        why = "its src had uncommitted changes when the run started: re-run on committed code"
        return [f"{label}: git_commit {commit}: {why}"]
    known = is_ancestor(root, commit, "HEAD")
    if known is None:
        shallow = git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
        if shallow:
            return []
        return [f"{label}: git_commit {commit} is not a commit of this repository"]
    if not known:
        why = "written by code never committed on this history: re-run the bench on committed code"
        return [f"{label}: git_commit {commit} is not an ancestor of HEAD ({why})"]
    changed = last_change(root, f"{project}/src")
    if changed and is_ancestor(root, changed, commit) is False:
        why = f"{changed[:7]} changed {project}/src after it: re-run the bench on committed code"
        return [f"{label}: stale: written at {commit}, but {why}"]
    return []
