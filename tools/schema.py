"""The results schema of CONVENTIONS.md section 6, as one validation function used by report and check.

Standard library only: tools/ reads the papers' results files and never imports their code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TOP_KEYS = ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics", "claims")
CLAIM_KEYS = ("id", "statement", "paper", "ours", "holds")
PERF_KEYS = ("id", "what")


def validate_results(data: Any, slug: str | None = None) -> list[str]:
    """Return one message per problem in a parsed results document (empty list: valid)."""
    if not isinstance(data, dict):
        return [f"top level is {type(data).__name__}, expected an object"]
    problems = [f"missing key '{k}'" for k in TOP_KEYS if k not in data]
    if slug is not None and "paper" in data and data["paper"] != slug:
        problems.append(f"paper is {data['paper']!r}, expected {slug!r}")
    metrics = data.get("metrics", {})
    if not isinstance(metrics, dict) or len(metrics) < 2:
        problems.append("metrics must compare the method with at least one baseline (>= 2 entries)")
    else:
        for method, values in metrics.items():
            if not isinstance(values, dict) or not values:
                problems.append(f"metrics['{method}'] must map metric names to values")
    claims = data.get("claims", [])
    if not isinstance(claims, list) or not claims:
        problems.append("claims must be a non-empty list")
        claims = []
    for i, c in enumerate(claims):
        if not isinstance(c, dict):
            problems.append(f"claims[{i}] is not an object")
            continue
        name = c.get("id", f"#{i}")
        problems += [f"claim {name} lacks '{k}'" for k in CLAIM_KEYS if k not in c]
        if "holds" in c and not isinstance(c["holds"], bool):
            problems.append(f"claim {name}: 'holds' must be true or false, got {c['holds']!r}")
        if "paper" in c and not str(c["paper"]).strip():
            problems.append(
                f"claim {name}: 'paper' is empty (give the paper's number or say what it reports)"
            )
    perf = data.get("performance", [])
    if not isinstance(perf, list):
        problems.append("performance must be a list")
        perf = []
    for i, p in enumerate(perf):
        if not isinstance(p, dict):
            problems.append(f"performance[{i}] is not an object")
            continue
        problems += [
            f"performance {p.get('id', f'#{i}')} lacks '{k}'" for k in PERF_KEYS if k not in p
        ]
    return problems


def load_results(path: Path, slug: str | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """Read and validate one results file; problems are prefixed with the file's path."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return None, [f"{path}: unreadable results file ({exc})"]
    problems = [f"{path}: {p}" for p in validate_results(data, slug)]
    return (data if not problems else None), problems
