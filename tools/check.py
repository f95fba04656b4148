#!/usr/bin/env python3
"""Validate meta.toml against repos/ and each built project's layout, README and results.

    python3 tools/check.py [--paper SLUG] [--strict] [--root DIR]

One line per problem, then a summary. Papers registered but not built yet are listed as such;
they fail the check only with --strict. Exit 1 when a built paper (or meta.toml) falls short.
Results: quick.json is required; paper.json and gpu-smoke.json are validated when present; each
must be fresh (its git_commit an ancestor of HEAD, and no later commit changed the project's src/).
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from freshness import freshness_problems
from schema import RESULT_FILES, load_results
from sync import drift

META_KEYS = (
    "title",
    "method",
    "paper",
    "official_code",
    "framework",
    "path",
    "package",
    "cli",
    "claim",
)
README_SECTIONS = ("Paper", "Claim", "Method", "Quick start", "Results", "Scaling up", "Deviations")
MODULES = ("config.py", "cli.py", "train.py", "bench.py", "hooks.py")
MIN_TESTS = 8
MIN_MUTANTS = 8
VERDICT_CHARS = 120


def check_meta(meta: dict, root: Path) -> list[str]:
    problems = []
    papers = meta.get("papers")
    if not isinstance(papers, dict) or not papers:
        return ["meta.toml: no [papers.<slug>] tables"]
    for slug, entry in papers.items():
        for key in META_KEYS:
            if key not in entry:
                problems.append(f"{slug}: meta.toml lacks '{key}'")
            elif key != "official_code" and not str(entry[key]).strip():
                problems.append(f"{slug}: meta.toml '{key}' is empty")
        conclusion = entry.get("verdict")
        if not str(conclusion or "").strip():
            problems.append(
                f"{slug}: meta.toml lacks 'verdict' (one human-written line, <= "
                f"{VERDICT_CHARS} characters: what the results say about the paper)"
            )
        elif len(str(conclusion)) > VERDICT_CHARS:
            problems.append(
                f"{slug}: meta.toml 'verdict' is {len(str(conclusion))} characters "
                f"(at most {VERDICT_CHARS})"
            )
        no_deps = entry.get("no_deps", [])
        if not isinstance(no_deps, list) or not all(
            isinstance(spec, str) and re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", spec)
            for spec in no_deps
        ):
            problems.append(
                f"{slug}: meta.toml 'no_deps' must be a list of exact pins 'name==version'"
            )
        smoke = entry.get("gpu_smoke", [])
        if not smoke:
            problems.append(
                f"{slug}: meta.toml lacks 'gpu_smoke' (CLI arguments running the full preset at "
                "tiny size; each project's tests run them on the CPU)"
            )
        elif not isinstance(smoke, list) or not all(isinstance(arg, str) for arg in smoke):
            problems.append(
                f"{slug}: meta.toml 'gpu_smoke' must be a list of CLI arguments (strings)"
            )
        elif any(arg in ("--device", "--results-dir") for arg in smoke):
            problems.append(
                f"{slug}: meta.toml 'gpu_smoke' must not set --device/--results-dir (the session does)"
            )
        if entry.get("path") not in (None, f"repos/{slug}"):
            problems.append(f"{slug}: meta.toml path is {entry['path']!r}, expected 'repos/{slug}'")
    repos = root / "repos"
    if repos.is_dir():
        for folder in sorted(p.name for p in repos.iterdir() if p.is_dir()):
            if folder not in papers:
                problems.append(f"repos/{folder}: folder not registered in meta.toml")
    return problems


def readme_problems(slug: str, text: str) -> list[str]:
    heads = [h.strip().lower() for h in re.findall(r"^#{2,3}\s+(.+)$", text, re.MULTILINE)]
    positions = []
    problems = []
    for section in README_SECTIONS:
        found = [i for i, h in enumerate(heads) if h.startswith(section.lower())]
        if not found:
            problems.append(f"{slug}: README.md lacks a '## {section}' section")
        else:
            positions.append(found[0])
    if not problems and positions != sorted(positions):
        problems.append(
            f"{slug}: README.md sections are out of order (expected {', '.join(README_SECTIONS)})"
        )
    return problems


def results_problems(root: Path, slug: str, entry: dict) -> list[str]:
    """Schema and freshness of every results file the project has (quick.json required)."""
    project = entry.get("path", f"repos/{slug}")
    problems = []
    if not (root / project / "results" / "quick.json").exists():
        problems.append(f"{slug}: no results/quick.json (run: ./run -s bench-{slug})")
    for name in RESULT_FILES:
        path = root / project / "results" / name
        if not path.exists():
            continue
        data, found = load_results(path, slug)
        label = f"{project}/results/{name}"
        problems += [f"{slug}: {p.replace(str(root) + '/', '')}" for p in found]
        if data is not None:
            commit = data.get("git_commit")
            problems += [f"{slug}: {p}" for p in freshness_problems(root, project, label, commit)]
    return problems


MIN_TEST_TIMEOUT = 900  # seconds; cogfd's 300 s failed its gpu_smoke test at load 14


def check_paper(root: Path, slug: str, entry: dict) -> list[str]:
    repo = root / entry.get("path", f"repos/{slug}")
    problems = []
    try:
        pyproject = tomllib.loads((repo / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return [f"{slug}: pyproject.toml unreadable ({exc})"]
    project = pyproject.get("project", {})
    if not project.get("dependencies"):
        problems.append(f"{slug}: pyproject.toml declares no dependencies")
    if "test" not in project.get("optional-dependencies", {}):
        problems.append(f"{slug}: pyproject.toml has no [test] extra")
    timeout = pyproject.get("tool", {}).get("pytest", {}).get("ini_options", {}).get("timeout")
    if not isinstance(timeout, int) or timeout < MIN_TEST_TIMEOUT:
        problems.append(
            f"{slug}: [tool.pytest.ini_options] timeout is {timeout!r}; a hang guard must be at "
            f"least {MIN_TEST_TIMEOUT} s, or a loaded machine fails a slow test that is not hung"
        )
    script = project.get("scripts", {}).get(entry.get("cli", ""))
    if script != f"{entry.get('package')}.cli:main":
        problems.append(
            f"{slug}: console script '{entry.get('cli')}' should be '{entry.get('package')}.cli:main', got {script!r}"
        )
    src = repo / "src" / entry.get("package", "")
    for module in MODULES:
        if not (src / module).exists():
            problems.append(f"{slug}: src/{entry.get('package')}/{module} is missing")
    readme = repo / "README.md"
    problems += (
        readme_problems(slug, readme.read_text())
        if readme.exists()
        else [f"{slug}: README.md is missing"]
    )
    tests = sorted((repo / "tests").rglob("test_*.py")) if (repo / "tests").is_dir() else []
    tests = [t for t in tests if t.name != "test_skeleton.py"]  # generated: not the paper's own
    n_tests = sum(len(re.findall(r"^\s*def test_", t.read_text(), re.MULTILINE)) for t in tests)
    if n_tests < MIN_TESTS:
        problems.append(
            f"{slug}: {n_tests} test functions in tests/ (expected at least {MIN_TESTS})"
        )
    problems += [f"{slug}: {p}" for p in drift(root, slug, entry)]
    problems += results_problems(root, slug, entry)
    if not list((repo / "results" / "figures").glob("*.png")):
        problems.append(f"{slug}: no figures in results/figures/")
    return problems


def count_mutants(path: Path) -> int | str:
    """Number of [[mutant]] entries in a mutants.toml, or the reason it cannot be read."""
    try:
        entries = tomllib.loads(path.read_text()).get("mutant", [])
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return f"unreadable ({exc})"
    return len(entries) if isinstance(entries, list) else "'mutant' must be an array of tables"


def mutant_problems(root: Path, papers: dict, slugs: list[str]) -> list[str]:
    """tests/mutants.toml: readable wherever it exists; once every built paper has one, each
    needs at least MIN_MUTANTS (until then the papers without one are listed, not failed)."""
    problems, missing = [], []
    counts: dict[str, int] = {}
    for slug in slugs:
        path = root / papers[slug].get("path", f"repos/{slug}") / "tests" / "mutants.toml"
        if not path.exists():
            missing.append(slug)
            continue
        n = count_mutants(path)
        if isinstance(n, str):
            problems.append(f"{slug}: tests/mutants.toml {n}")
        else:
            counts[slug] = n
    if missing:
        print(f"mutation checks: no tests/mutants.toml yet in {', '.join(missing)}")
    elif slugs:
        problems += [
            f"{slug}: tests/mutants.toml lists {n} mutants (at least {MIN_MUTANTS} per paper)"
            for slug, n in counts.items()
            if n < MIN_MUTANTS
        ]
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paper", help="check one paper only")
    ap.add_argument(
        "--strict", action="store_true", help="papers not built yet also fail the check"
    )
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = ap.parse_args(argv)
    root = args.root.resolve()
    try:
        meta = tomllib.loads((root / "meta.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"meta.toml unreadable ({exc})")
        return 1
    problems = check_meta(meta, root)
    papers = meta.get("papers", {})
    if args.paper and args.paper not in papers:
        print(f"{args.paper}: no [papers.{args.paper}] table in meta.toml")
        return 1
    slugs = [args.paper] if args.paper else list(papers)
    unbuilt, conforming = [], 0
    for slug in slugs:
        if not (root / papers[slug].get("path", f"repos/{slug}") / "pyproject.toml").exists():
            unbuilt.append(slug)
            continue
        found = check_paper(root, slug, papers[slug])
        conforming += not found
        problems += found
    problems += mutant_problems(root, papers, [s for s in slugs if s not in unbuilt])
    for p in problems:
        print(p)
    for slug in unbuilt:
        print(f"{slug}: not built yet (start it with: python3 tools/new.py {slug})")
    built = len(slugs) - len(unbuilt)
    print(
        f"{conforming}/{built} built paper projects conform; {len(unbuilt)} not built yet; {len(problems)} problems"
    )
    return 1 if problems or (args.strict and unbuilt) else 0


if __name__ == "__main__":
    sys.exit(main())
