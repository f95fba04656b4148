#!/usr/bin/env python3
"""Mutation checks: does the test suite catch the plausible bugs a project lists?

    python3 tools/mutants.py SLUG [--root DIR] [--timeout S] [--only N ...] [--python PY]

Reads repos/SLUG/tests/mutants.toml:

    [[mutant]]
    file = "src/pkg/module.py"     # relative to the project folder
    find = "exact text"            # must occur exactly once in that file
    replace = "the bug"
    why = "what the bug does to the result"
    select = "expected_kill"       # optional: pytest -k expression (default: the whole suite)

Each mutant is applied to a fresh copy of the project; its (selected) tests run there with the
copy's src/ first on the import path, under a time limit. Killed: the tests fail (or time out).
Survived: they pass. Before the mutants, the same selections run unmutated and must pass, so a
kill means the bug, not a broken test. Exit 0 when every mutant is killed; 1 when one survives, a
`find` does not match exactly once, or an unmutated selection fails; 2 on unusable input.
The nox session `mutants-SLUG` runs this in the paper's own environment.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".venv", ".nox", "runs", "__pycache__", ".pytest_cache", ".ruff_cache", "*.egg-info"
)
FIELDS = ("file", "find", "replace", "why")


@dataclass(frozen=True)
class Mutant:
    file: str
    find: str
    replace: str
    why: str
    select: str = ""


class MutantsError(ValueError):
    """A mutants.toml that cannot be used as written."""


def load_mutants(path: Path) -> list[Mutant]:
    try:
        entries = tomllib.loads(path.read_text()).get("mutant", [])
    except FileNotFoundError:
        raise MutantsError(f"{path}: no such file (list the project's mutants there)") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise MutantsError(f"{path}: unreadable ({exc})") from None
    if not isinstance(entries, list) or not entries:
        raise MutantsError(f"{path}: no [[mutant]] entries")
    out = []
    for i, entry in enumerate(entries, 1):
        missing = [k for k in FIELDS if not str(entry.get(k, "")).strip()]
        if missing:
            raise MutantsError(f"{path}: mutant {i} lacks {', '.join(missing)}")
        if entry["find"] == entry["replace"]:
            raise MutantsError(f"{path}: mutant {i} replaces its text with itself")
        out.append(Mutant(**{k: str(entry[k]) for k in (*FIELDS, "select") if k in entry}))
    return out


def match_problem(project: Path, m: Mutant) -> str | None:
    """Why a mutant cannot be applied as written (None when its text occurs exactly once)."""
    target = project / m.file
    if not target.is_file():
        return f"{m.file}: no such file"
    count = target.read_text().count(m.find)
    if count != 1:
        return f"{m.file}: `find` occurs {count} times (must be exactly once): {m.find!r}"
    return None


def copy_project(project: Path, into: Path) -> Path:
    dest = into / project.name
    shutil.copytree(project, dest, ignore=IGNORE, symlinks=True)
    return dest


def run_tests(copy: Path, select: str, timeout: float, python: str) -> tuple[str, float, str]:
    """('pass' | 'fail' | 'timeout' | 'no tests', seconds, last output line) of pytest in copy."""
    cmd = [python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header"]
    if select:
        cmd += ["-k", select]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy / "src"), str(copy)])}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("MPLBACKEND", "Agg")
    start = time.monotonic()
    try:
        done = subprocess.run(
            cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start, f"no result within {timeout:.0f} s"
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    status = {0: "pass", 5: "no tests"}.get(done.returncode, "fail")
    return status, time.monotonic() - start, last


def imports_from_copy(copy: Path, package: str, python: str) -> bool:
    """The copy's package, not the installed project, is what the tests will import."""
    env = {**os.environ, "PYTHONPATH": str(copy / "src")}
    probe = subprocess.run(
        [python, "-c", f"import {package}, sys; sys.stdout.write({package}.__file__)"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return probe.returncode == 0 and Path(probe.stdout).resolve().is_relative_to(copy.resolve())


def check_project(
    project: Path, package: str, timeout: float, python: str, only: list[int] | None = None
) -> int:
    mutants = load_mutants(project / "tests" / "mutants.toml")
    chosen = [(i, m) for i, m in enumerate(mutants, 1) if not only or i in only]
    problems = [(i, match_problem(project, m)) for i, m in chosen]
    bad = [(i, p) for i, p in problems if p]
    for i, p in bad:
        print(f"mutant {i}: cannot apply: {p}")
    if bad:
        return 1
    status = 0
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        clean = copy_project(project, Path(tmp) / "clean")
        if not imports_from_copy(clean, package, python):
            raise MutantsError(
                f"{python} does not import {package} from the copy's src/: install the project "
                "in that environment, or pass --python"
            )
        # one unmutated run of every selection together (the whole suite if one mutant has none)
        selects = sorted({m.select for _, m in chosen})
        union = "" if "" in selects else " or ".join(f"({s})" for s in selects)
        result, secs, last = run_tests(clean, union, timeout, python)
        label = f"-k {union!r}" if union else "the whole suite"
        if result != "pass":
            print(f"unmutated {label}: {result} ({secs:.0f} s): {last}")
            return 1
        print(f"unmutated {label}: passes ({secs:.0f} s)")
        killed = 0
        for i, m in chosen:
            copy = copy_project(project, Path(tmp) / f"m{i}")
            target = copy / m.file
            target.write_text(target.read_text().replace(m.find, m.replace, 1))
            result, secs, last = run_tests(copy, m.select, timeout, python)
            verdict = {"fail": "killed", "timeout": "killed (timeout)"}.get(result, "SURVIVED")
            killed += verdict.startswith("killed")
            if not verdict.startswith("killed"):
                status = 1
            print(f"mutant {i}: {verdict} in {secs:.0f} s  [{m.file}] {m.why}")
            if verdict == "SURVIVED":
                print(f"    tests still {result}: {last}")
            shutil.rmtree(copy, ignore_errors=True)
    print(f"{project.name}: {killed}/{len(chosen)} mutants killed")
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("slug")
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("--timeout", type=float, default=600, help="seconds per test run")
    ap.add_argument("--only", type=int, nargs="+", help="mutant numbers (1-based) to run")
    ap.add_argument("--python", default=sys.executable, help="interpreter with the project")
    args = ap.parse_args(argv)
    try:
        papers = tomllib.loads((args.root / "meta.toml").read_text())["papers"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        print(f"error: {args.root / 'meta.toml'}: {exc}", file=sys.stderr)
        return 2
    if args.slug not in papers:
        print(f"error: no [papers.{args.slug}] in meta.toml", file=sys.stderr)
        return 2
    entry = papers[args.slug]
    # the tests run in a copy of the project: a relative interpreter path must not depend on cwd
    # (abspath, not resolve: a venv's python is a symlink that must stay one)
    python = os.path.abspath(args.python) if os.sep in args.python else args.python
    try:
        return check_project(
            args.root / entry["path"], entry["package"], args.timeout, python, args.only
        )
    except MutantsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
