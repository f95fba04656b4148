#!/usr/bin/env python3
"""Map a change to the paper projects it touches, as a JSON list for a CI matrix.

    python3 ci/changed_papers.py --base origin/main     # papers touched since BASE (git diff)
    python3 ci/changed_papers.py path/a path/b          # papers touched by these paths
    python3 ci/changed_papers.py --all                  # every built paper

A change to a shared file (meta.toml, noxfile.py, tools/, ci/, .ci/, run) touches every built
paper; a change under repos/<slug>/ touches that paper; anything else (README.md, docs) none.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ("meta.toml", "noxfile.py", "run", "tools/", "ci/", ".ci/")


def built_papers(root: Path) -> dict[str, str]:
    papers = tomllib.loads((root / "meta.toml").read_text())["papers"]
    return {
        s: p["path"] for s, p in papers.items() if (root / p["path"] / "pyproject.toml").exists()
    }


def touched(paths: list[str], papers: dict[str, str]) -> list[str]:
    if any(p == s or (s.endswith("/") and p.startswith(s)) for p in paths for s in SHARED):
        return sorted(papers)
    return sorted(
        s for s, path in papers.items() if any(p.startswith(path.rstrip("/") + "/") for p in paths)
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--base", help="git revision to diff against")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--root", type=Path, default=ROOT)
    args = ap.parse_args(argv)
    papers = built_papers(args.root)
    paths = list(args.paths)
    if args.base:
        diff = subprocess.run(
            ["git", "diff", "--name-only", f"{args.base}...HEAD"],
            cwd=args.root,
            capture_output=True,
            text=True,
            check=True,
        )
        paths += diff.stdout.split()
    print(json.dumps(sorted(papers) if args.all else touched(paths, papers)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
