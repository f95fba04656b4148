"""The results schema of CONVENTIONS.md section 6, as one validation function used by report and check.

Standard library only: tools/ reads the papers' results files and never imports their code.

Results files per project: results/quick.json (mode "quick"), results/paper.json (mode "paper",
the smallest CPU scale where the paper's effect is expected) and results/gpu-smoke.json (the full
preset at tiny size on a CUDA device, any mode). Performance rows carry their unit:

    {"id", "what", "unit": "s", "higher_is_better": false, "ours_value": 1.2,
     "peer": "OR-Tools", "peer_value": 0.4}

The legacy form {"ours_s", "peer_s"} is read as unit "s", lower is better.

A claim's verdict rests on `test`, a list of parts {what, estimate, interval [lo, hi], level,
method, threshold, direction (">" or "<": the side the paper claims), n, unit}; `verdict` is
"holds" (every part's interval on the claimed side of its threshold, on >= 3 units), "contradicted"
(some part's interval entirely on the other side) or "inconclusive". The stored verdict, `holds`
and `seeds_needed` must follow from the parts. Claims in the older form (no `test`) are read with
their computed boolean `holds` until every paper has moved. A claim with "role": "control" is a
negative control: it must not hold, and the report counts it apart from the paper's claims.
A claim with "precondition": "<id of another claim in the file>" is read only where that claim
holds; otherwise it is inconclusive, with its numbers' own verdict in `verdict_of_numbers`, the
reason in `not_read` and no `seeds_needed`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

TOP_KEYS = ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics", "claims")
CLAIM_KEYS = ("id", "statement", "paper", "ours", "holds")
PART_KEYS = ("what", "estimate", "interval", "threshold", "direction", "n")
VERDICTS = ("holds", "contradicted", "inconclusive")
MIN_UNITS = 3  # paired seeds (or units) a `holds` must rest on
SEEDS_NEEDED_CAP = 100
PERF_KEYS = ("id", "what")
# results file name -> the mode it must declare (None: any)
RESULT_FILES = {"quick.json": "quick", "paper.json": "paper", "gpu-smoke.json": None}
# metric-name tokens that mark a timing, excluded when a re-run is compared with a committed file
TIMING_TOKENS = frozenset(
    {
        "s",
        "sec",
        "secs",
        "second",
        "seconds",
        "ms",
        "time",
        "times",
        "timing",
        "wall",
        "runtime",
        "latency",
    }
)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_timing_key(name: str) -> bool:
    """True for metric names such as 'wall_seconds', 'time_to_gap', 'ours_s', 'steps_per_s'."""
    return any(t in TIMING_TOKENS for t in re.split(r"[^a-z0-9]+", name.lower()) if t)


def perf_figures(row: dict[str, Any]) -> tuple[Any, Any, str, bool]:
    """(ours, peer, unit, higher_is_better) of one performance row, legacy seconds form included."""
    if any(k in row for k in ("ours_value", "peer_value", "unit")):
        return (
            row.get("ours_value"),
            row.get("peer_value"),
            str(row.get("unit", "")),
            bool(row.get("higher_is_better", False)),
        )
    return row.get("ours_s"), row.get("peer_s"), "s", False


def perf_problems(row: Any, i: int) -> list[str]:
    if not isinstance(row, dict):
        return [f"performance[{i}] is not an object"]
    name = row.get("id", f"#{i}")
    problems = [f"performance {name} lacks '{k}'" for k in PERF_KEYS if k not in row]
    if ("ours_value" in row or "peer_value" in row) and not str(row.get("unit", "")).strip():
        problems.append(f"performance {name}: 'ours_value' needs a 'unit' (e.g. \"s\", \"MB\")")
    if "higher_is_better" in row and not isinstance(row["higher_is_better"], bool):
        problems.append(f"performance {name}: 'higher_is_better' must be true or false")
    ours, peer, _, _ = perf_figures(row)
    if not is_number(ours):
        problems.append(
            f"performance {name}: no measured figure (give 'ours_value' with 'unit', or drop the row)"
        )
    if "peer" in row and not is_number(peer):
        problems.append(
            f"performance {name}: names peer {row['peer']!r} without a measured 'peer_value'"
        )
    return problems


def tolerance_problems(tol: Any) -> list[str]:
    if not isinstance(tol, dict):
        return ["tolerance must be an object {rtol, atol, why}"]
    problems = [
        f"tolerance '{k}' must be a number >= 0"
        for k in ("rtol", "atol")
        if k in tol and not (is_number(tol[k]) and tol[k] >= 0)
    ]
    if not str(tol.get("why", "")).strip():
        problems.append("tolerance needs a 'why' (the documented source of nondeterminism)")
    if "exclude" in tol and not (
        isinstance(tol["exclude"], list) and all(isinstance(x, str) for x in tol["exclude"])
    ):
        problems.append("tolerance 'exclude' must be a list of metric names")
    return problems


def part_verdict(p: dict[str, Any]) -> str:
    lo, hi = p["interval"]
    if lo is None or hi is None:
        return "inconclusive"
    t = p["threshold"]
    if p["direction"] == ">":
        return "holds" if lo > t else ("contradicted" if hi < t else "inconclusive")
    return "holds" if hi < t else ("contradicted" if lo > t else "inconclusive")


def verdict_of(parts: list[dict[str, Any]]) -> str:
    """The verdict that a claim's parts imply (CONVENTIONS.md section 6)."""
    each = [part_verdict(p) for p in parts]
    if "contradicted" in each:
        return "contradicted"
    if each and all(v == "holds" for v in each) and all(p["n"] >= MIN_UNITS for p in parts):
        return "holds"
    return "inconclusive"


def seeds_needed(p: dict[str, Any]) -> int | None:
    """n * (half width / |estimate - threshold|)^2 for an undecided part (capped at CAP + 1)."""
    decided = part_verdict(p)
    if decided == "holds" and p["n"] < MIN_UNITS:
        return MIN_UNITS
    if decided != "inconclusive":
        return None
    lo, hi = p["interval"]
    gap = abs(p["estimate"] - p["threshold"])
    if lo is None or hi is None or not math.isfinite(hi - lo) or not gap > 0:
        return SEEDS_NEEDED_CAP + 1
    need = math.ceil(p["n"] * ((hi - lo) / 2 / gap) ** 2)
    return min(max(need, p["n"] + 1), SEEDS_NEEDED_CAP + 1)


def part_problems(p: Any, where: str) -> list[str]:
    if not isinstance(p, dict):
        return [f"{where} is not an object"]
    problems = [f"{where} lacks '{k}'" for k in PART_KEYS if k not in p]
    if problems:
        return problems
    interval = p["interval"]
    if not (isinstance(interval, list) and len(interval) == 2):
        return [f"{where}: interval must be [lo, hi]"]
    lo, hi = interval
    if (lo is None) != (hi is None) or not all(v is None or is_number(v) for v in interval):
        problems.append(f"{where}: interval must be two numbers (or two nulls: not computable)")
    elif lo is not None and lo > hi:
        problems.append(f"{where}: interval [{lo}, {hi}] is reversed")
    if not is_number(p["estimate"]) or not is_number(p["threshold"]):
        problems.append(f"{where}: estimate and threshold must be finite numbers")
    if p["direction"] not in (">", "<"):
        problems.append(f"{where}: direction must be '>' or '<', got {p['direction']!r}")
    if not isinstance(p["n"], int) or isinstance(p["n"], bool) or p["n"] < 1:
        problems.append(f"{where}: n must be a whole number >= 1, got {p['n']!r}")
    return problems


def claim_problems(c: dict[str, Any], name: str, precondition: str | None = None) -> list[str]:
    """A structured claim whose stored verdict, holds or seeds_needed does not follow.
    `precondition`: the verdict of the claim it is read under; when that does not hold the claim
    must be inconclusive, keep its numbers' verdict in verdict_of_numbers, say why in not_read and
    carry no seeds_needed."""
    if c.get("role", "claim") not in ("claim", "control"):
        return [f"claim {name}: role must be 'claim' or 'control' (a negative control)"]
    test = c.get("test")
    if test is None:
        if "verdict" in c:
            return [f"claim {name}: a 'verdict' needs the 'test' parts it rests on"]
        return []
    if not isinstance(test, list) or not test:
        return [f"claim {name}: 'test' must be a non-empty list of parts"]
    problems = [q for i, p in enumerate(test) for q in part_problems(p, f"claim {name} part {i}")]
    if problems:
        return problems
    if "verdict" not in c:
        return [f"claim {name}: has 'test' but no 'verdict' line"]
    expected = verdict_of(test)
    if precondition not in (None, "holds"):
        return gated_problems(c, name, expected, precondition)
    if "not_read" in c or "verdict_of_numbers" in c:
        problems.append(f"claim {name}: 'not_read' but its precondition holds (or it has none)")
    if c["verdict"] != expected:
        why = ""
        if expected == "inconclusive" and all(part_verdict(p) == "holds" for p in test):
            why = f" (a holds needs >= {MIN_UNITS} paired units)"
        problems.append(
            f"claim {name}: stored verdict {c['verdict']!r} does not follow from its numbers "
            f"({expected!r}){why}"
        )
    if c.get("holds") is not (expected == "holds"):
        problems.append(f"claim {name}: 'holds' must be {expected == 'holds'} (verdict {expected})")
    if expected == "inconclusive":
        needed = [s for s in map(seeds_needed, test) if s is not None]
        if needed and c.get("seeds_needed") != max(needed):
            problems.append(
                f"claim {name}: seeds_needed must be {max(needed)}, got {c.get('seeds_needed')!r}"
            )
    return problems


def gated_problems(c: dict[str, Any], name: str, numbers: str, precondition: str) -> list[str]:
    """A claim whose precondition does not hold: inconclusive, whatever its numbers say."""
    want = {"verdict": "inconclusive", "holds": False, "verdict_of_numbers": numbers}
    problems = [
        f"claim {name}: its precondition is {precondition}, so {k!r} must be {v!r}, got "
        f"{c.get(k)!r}"
        for k, v in want.items()
        if c.get(k) != v
    ]
    if not c.get("not_read"):
        problems.append(f"claim {name}: 'not_read' must say which precondition fails")
    if "seeds_needed" in c:
        problems.append(f"claim {name}: no seeds_needed when a precondition fails")
    return problems


def claim_verdict(c: dict[str, Any]) -> str:
    """holds / contradicted / inconclusive, or 'not held' for a claim in the older form."""
    if c.get("test"):
        return "inconclusive" if c.get("not_read") else verdict_of(c["test"])
    return "holds" if c.get("holds") else "not held"


def validate_results(data: Any, slug: str | None = None, mode: str | None = None) -> list[str]:
    """Return one message per problem in a parsed results document (empty list: valid)."""
    if not isinstance(data, dict):
        return [f"top level is {type(data).__name__}, expected an object"]
    problems = [f"missing key '{k}'" for k in TOP_KEYS if k not in data]
    if slug is not None and "paper" in data and data["paper"] != slug:
        problems.append(f"paper is {data['paper']!r}, expected {slug!r}")
    if mode is not None and "mode" in data and data["mode"] != mode:
        problems.append(f"mode is {data['mode']!r}, expected {mode!r}")
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
    by_id = {c.get("id"): c for c in claims if isinstance(c, dict)}
    for i, c in enumerate(claims):
        if not isinstance(c, dict):
            problems.append(f"claims[{i}] is not an object")
            continue
        name = c.get("id", f"#{i}")
        pid, pre = c.get("precondition"), None
        if pid is not None and pid not in by_id:
            problems.append(f"claim {name}: its precondition {pid!r} is not a claim of this file")
        elif pid is not None:
            pre = claim_verdict(by_id[pid])
        problems += [f"claim {name} lacks '{k}'" for k in CLAIM_KEYS if k not in c]
        if "holds" in c and not isinstance(c["holds"], bool):
            problems.append(f"claim {name}: 'holds' must be true or false, got {c['holds']!r}")
        if "paper" in c and not str(c["paper"]).strip():
            problems.append(
                f"claim {name}: 'paper' is empty (give the paper's number or say what it reports)"
            )
        problems += claim_problems(c, name, pre)
    perf = data.get("performance", [])
    if not isinstance(perf, list):
        problems.append("performance must be a list")
        perf = []
    for i, p in enumerate(perf):
        problems += perf_problems(p, i)
    if "tolerance" in data:
        problems += tolerance_problems(data["tolerance"])
    return problems


def load_results(
    path: Path, slug: str | None = None, mode: str | None = None
) -> tuple[dict[str, Any] | None, list[str]]:
    """Read and validate one results file; problems are prefixed with the file's path.

    `mode` defaults to what the file name implies (quick.json -> "quick", paper.json -> "paper").
    The document comes back unless a problem is outside its performance rows; a malformed
    performance row is reported and dropped (the claims still stand).
    """
    if mode is None:
        mode = RESULT_FILES.get(path.name)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return None, [f"{path}: unreadable results file ({exc})"]
    found = validate_results(data, slug, mode)
    problems = [f"{path}: {p}" for p in found]
    if any(not p.startswith("performance") for p in found):
        return None, problems
    if found:
        data["performance"] = [
            row for i, row in enumerate(data["performance"]) if not perf_problems(row, i)
        ]
    return data, problems


def main(argv: list[str]) -> int:
    """python3 tools/schema.py FILE...: print each file's problems; exit 1 when any has one."""
    bad = 0
    for name in argv:
        path = Path(name)
        slug = path.resolve().parent.parent.name if path.parent.name == "results" else None
        _, problems = load_results(path, slug)
        print("\n".join(problems) or f"{path}: valid")
        bad += bool(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
