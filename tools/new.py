#!/usr/bin/env python3
"""Start a paper project from the template: `python3 tools/new.py SLUG [--root DIR] [--force]`.

Copies tools/template/ into the path that meta.toml registers for SLUG, replacing the
placeholders __slug__, __package__, __cli__, __method__ and __title__ (also in file names). The
files tools/sync.py keeps in step get its header; the others are the project's own from then on.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sync import GENERATED, TEMPLATE, header, render

SKIP = {"__pycache__", ".ruff_cache", ".pytest_cache", ".venv", "runs"}


def create(root: Path, slug: str, force: bool = False) -> Path:
    meta = tomllib.loads((root / "meta.toml").read_text()).get("papers", {})
    if slug not in meta:
        raise SystemExit(
            f"error: no [papers.{slug}] table in {root / 'meta.toml'}; register it first"
        )
    entry = meta[slug]
    target = root / entry["path"]
    if target.exists() and any(target.iterdir()) and not force:
        raise SystemExit(
            f"error: {target} exists and is not empty (use --force to overwrite files)"
        )
    for src in sorted(TEMPLATE.rglob("*")):
        if src.is_dir() or SKIP.intersection(src.parts):
            continue
        rel = str(src.relative_to(TEMPLATE))
        dest = target / render(rel, entry, slug)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            text = render(src.read_text(), entry, slug)
            dest.write_text(header(rel) + text if rel in GENERATED else text)
        except UnicodeDecodeError:
            shutil.copyfile(src, dest)
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("slug")
    ap.add_argument("--root", default=Path(__file__).resolve().parents[1], type=Path)
    ap.add_argument("--force", action="store_true", help="overwrite files in a non-empty folder")
    args = ap.parse_args(argv)
    target = create(args.root.resolve(), args.slug, args.force)
    print(f"created {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
