# generated from tools/template/conftest.py by tools/sync.py; edit there, then run python3 tools/sync.py
"""Fixtures every project's tests share: the README's Quick start, run once and shrunk.

What is the project's own lives in tests/skeleton.toml (data, not code):

    [readme]
    slow = false                 # true: the README test is marked slow (excluded by default)
    figures = ["quick_x.png"]    # files the bench must write under runs/quick/figures/
    [readme.shrink]              # flags added to every Quick start command (a field -> a value)
    steps = 2                    # --steps 2; a list gives several values, true a bare flag
    seeds = [0]
    quiet = true
    [readme.command_flags]       # a command's own flags, in place of the shrink (e.g. a converter)
    demos = []
    [[misuse]]                   # bad command lines: exit 2, one line naming the problem, no files
    argv = ["train", "--steps", "0"]
    message = "steps must be >= 1"
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent
CLI = "smartrag"


def skeleton_settings() -> dict:
    """tests/skeleton.toml of this project (an empty table where there is none)."""
    path = PROJECT / "tests" / "skeleton.toml"
    return tomllib.loads(path.read_text()) if path.exists() else {}


def as_flags(values: dict) -> list[str]:
    """{field: value} -> command-line flags (true: a bare flag; a list: several values)."""
    flags: list[str] = []
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif isinstance(value, list):
            flags += [flag, *map(str, value)]
        else:
            flags += [flag, str(value)]
    return flags


def readme_commands() -> list[list[str]]:
    """Every `smartrag ...` line of the README's Quick start (a trailing # comment dropped)."""
    text = (PROJECT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    pattern = rf"^(?:\.venv/bin/)?({re.escape(CLI)} .+)$"
    return [shlex.split(line.split(" #")[0]) for line in re.findall(pattern, section, re.MULTILINE)]


@dataclass
class ReadmeRun:
    """The README's Quick start commands, run shrunk in `folder`, with their exit codes."""

    folder: Path
    commands: list[list[str]]
    codes: list[int]

    def results(self, preset: str = "quick") -> dict:
        """The results file a README bench wrote under runs/<preset>/."""
        return json.loads((self.folder / "runs" / preset / f"{preset}.json").read_text())


@pytest.fixture(scope="session")
def readme_run(tmp_path_factory) -> ReadmeRun:
    """Run the README's Quick start once per session, shrunk by tests/skeleton.toml."""
    from smartrag.cli import main

    settings = skeleton_settings().get("readme", {})
    shrink = as_flags(settings.get("shrink", {}))
    own = settings.get("command_flags", {})
    folder = tmp_path_factory.mktemp("readme")
    commands = readme_commands()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        codes = [main(argv[1:] + list(own.get(argv[1], shrink))) for argv in commands]
    finally:
        os.chdir(cwd)
    return ReadmeRun(folder, commands, codes)
