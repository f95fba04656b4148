#!/usr/bin/env python3
"""Compare a re-run's results with the committed file: same seeds, metrics and claims.

    python3 tools/verify.py COMMITTED.json RERUN.json

Timings are excluded (top-level wall_seconds, created, environment, performance, and every metric
whose name has a timing token: s, seconds, ms, time, wall, latency, ...; see schema.is_timing_key).
Claims' verdicts must agree exactly. Numbers must agree within the committed file's `tolerance` {"rtol", "atol", "exclude": [names],
"why"} (default rtol 1e-6, atol 1e-9: a deterministic bench reproduces to print precision).
Exit 0 when they agree, 1 with one line per difference otherwise, 2 on unreadable input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from schema import claim_verdict, is_number, is_timing_key

DEFAULT_RTOL, DEFAULT_ATOL = 1e-6, 1e-9


def compare(
    old: Any, new: Any, where: str, rtol: float, atol: float, exclude: set[str]
) -> list[str]:
    """Differences between two metric trees (dicts, lists, numbers, strings)."""
    if isinstance(old, dict) and isinstance(new, dict):
        diffs = []
        for key in sorted(set(old) | set(new)):
            if key in exclude or is_timing_key(str(key)):
                continue
            if key not in new:
                diffs.append(f"{where}.{key}: missing in the re-run")
            elif key not in old:
                diffs.append(f"{where}.{key}: new in the re-run")
            else:
                diffs += compare(old[key], new[key], f"{where}.{key}", rtol, atol, exclude)
        return diffs
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(old)} values committed, {len(new)} in the re-run"]
        return [
            d
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in compare(a, b, f"{where}[{i}]", rtol, atol, exclude)
        ]
    if is_number(old) and is_number(new):
        if math.isclose(old, new, rel_tol=rtol, abs_tol=atol):
            return []
        return [f"{where}: committed {old!r}, re-run {new!r}"]
    if old != new and not (
        isinstance(old, float) and isinstance(new, float) and math.isnan(old) and math.isnan(new)
    ):
        return [f"{where}: committed {old!r}, re-run {new!r}"]
    return []


def verify(committed: dict[str, Any], rerun: dict[str, Any]) -> list[str]:
    tol = committed.get("tolerance") or {}
    rtol = float(tol.get("rtol", DEFAULT_RTOL))
    atol = float(tol.get("atol", DEFAULT_ATOL))
    exclude = set(tol.get("exclude", []))
    diffs = []
    for key in ("paper", "mode", "seeds"):
        if committed.get(key) != rerun.get(key):
            diffs.append(f"{key}: committed {committed.get(key)!r}, re-run {rerun.get(key)!r}")
    diffs += compare(
        committed.get("metrics", {}), rerun.get("metrics", {}), "metrics", rtol, atol, exclude
    )
    # verdicts must agree exactly (holds / contradicted / inconclusive; 'not held' in the older form)
    old_claims = {c.get("id"): claim_verdict(c) for c in committed.get("claims", [])}
    new_claims = {c.get("id"): claim_verdict(c) for c in rerun.get("claims", [])}
    for cid in sorted(set(old_claims) | set(new_claims), key=str):
        if old_claims.get(cid) != new_claims.get(cid):
            diffs.append(
                f"claim {cid}: verdict committed {old_claims.get(cid)!r}, "
                f"re-run {new_claims.get(cid)!r}"
            )
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("committed", type=Path)
    ap.add_argument("rerun", type=Path)
    args = ap.parse_args(argv)
    docs = []
    for path in (args.committed, args.rerun):
        try:
            docs.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            print(f"verify: cannot read {path} ({exc})", file=sys.stderr)
            return 2
    diffs = verify(*docs)
    for d in diffs:
        print(d)
    tol = docs[0].get("tolerance")
    where = f" (tolerance: {tol})" if tol else ""
    if diffs:
        print(f"verify: {len(diffs)} differences between {args.committed} and the re-run{where}")
        return 1
    print(f"verify: {args.committed} reproduced (timings excluded){where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
