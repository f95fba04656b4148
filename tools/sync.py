#!/usr/bin/env python3
"""Write the generated skeleton files from tools/template into every paper project, or check them.

    python3 tools/sync.py                 write them into every project of meta.toml
    python3 tools/sync.py --check         exit 1 listing every project file that differs (drift)
    python3 tools/sync.py --paper SLUG    one project only (with or without --check)

The generated files (GENERATED below) are the plumbing every project shares: the command line,
results and claims, the run helpers, and the tests of their contract. Each opens with a line naming
its template file; a project changes their behaviour through its own hooks.py and config.py, never
by editing a copy. tools/new.py renders the same files (and the project-owned starting points).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).resolve().parent / "template"
GENERATED = (
    "src/__package__/cli.py",
    "src/__package__/commands.py",
    "src/__package__/results.py",
    "src/__package__/runtime.py",
    "tests/test_skeleton.py",
    "conftest.py",
    "CITATION.cff",
    "LICENSE",
)
PLACEHOLDERS = (
    "slug",
    "package",
    "cli",
    "method",
    "title",
    "paper_url",
    "authors_cff",
    "gpu_smoke",
)


def authors_cff(names: list[str]) -> str:
    """CITATION.cff author entries: the last word is the family name."""
    rows = []
    for name in names:
        given, _, family = name.strip().rpartition(" ")
        rows.append(f'    - family-names: "{family}"\n      given-names: "{given}"')
    return "\n".join(rows) or '    - name: "unknown"'


def render(text: str, entry: dict, slug: str) -> str:
    values = {
        "slug": slug,
        "paper_url": entry.get("paper", ""),
        "authors_cff": authors_cff(entry.get("authors", [])),
        # inside a double-quoted Python string in the template: shlex quotes with single quotes
        "gpu_smoke": shlex.join(entry.get("gpu_smoke", [])).replace('"', '\\"'),
    }
    for key in PLACEHOLDERS:
        if f"__{key}__" in text:
            text = text.replace(f"__{key}__", values[key] if key in values else entry[key])
    return text


def header(template_path: str) -> str:
    """The first line of a generated file that takes comments (none for LICENSE)."""
    if not template_path.endswith((".py", ".cff")):
        return ""
    named = template_path.replace("__package__", "<package>")
    return (
        f"# generated from tools/template/{named} by tools/sync.py; edit there, "
        "then run python3 tools/sync.py\n"
    )


def generated(entry: dict[str, str], slug: str) -> dict[str, str]:
    """Project-relative path -> the content the template gives it."""
    return {
        render(rel, entry, slug): header(rel) + render((TEMPLATE / rel).read_text(), entry, slug)
        for rel in GENERATED
    }


def drift(root: Path, slug: str, entry: dict[str, str]) -> list[str]:
    """Generated files of one project that are missing or differ from the template."""
    repo = root / entry["path"]
    out = []
    for rel, text in generated(entry, slug).items():
        path = repo / rel
        if not path.exists():
            out.append(f"{entry['path']}/{rel}: missing (python3 tools/sync.py --paper {slug})")
        elif path.read_text() != text:
            out.append(
                f"{entry['path']}/{rel}: differs from tools/template (edit the template or the "
                f"project's hooks.py, then python3 tools/sync.py --paper {slug})"
            )
    return out


def write(root: Path, slug: str, entry: dict[str, str]) -> list[Path]:
    repo = root / entry["path"]
    written = []
    for rel, text in generated(entry, slug).items():
        path = repo / rel
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written.append(path)
    return written


def papers(root: Path) -> dict[str, dict[str, str]]:
    return tomllib.loads((root / "meta.toml").read_text())["papers"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report drift, write nothing")
    ap.add_argument("--paper", help="one project only")
    ap.add_argument("--root", type=Path, default=ROOT)
    args = ap.parse_args(argv)
    meta = papers(args.root)
    if args.paper and args.paper not in meta:
        print(f"error: no [papers.{args.paper}] in meta.toml", file=sys.stderr)
        return 2
    slugs = [args.paper] if args.paper else sorted(meta)
    slugs = [s for s in slugs if (args.root / meta[s]["path"]).is_dir()]
    if args.check:
        problems = [p for s in slugs for p in drift(args.root, s, meta[s])]
        for p in problems:
            print(p)
        print(f"sync: {len(slugs) - len({p.split('/')[1] for p in problems})}/{len(slugs)} in step")
        return 1 if problems else 0
    for s in slugs:
        for path in write(args.root, s, meta[s]):
            print(f"wrote {path.relative_to(args.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
