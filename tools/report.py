#!/usr/bin/env python3
"""Aggregate every repos/<slug>/results/{quick,paper}.json into REPORT.md and the README's tables.

    python3 tools/report.py [--root DIR] [--check]

REPORT.md: a summary table, then one section per paper that fits a screen: its verdict counts at
each preset (holds / contradicted / inconclusive; "not held" for claims still in the older
boolean form), its main figure, one line per claim (the paper's number, each preset's verdict with
the estimate and interval it rests on, the seeds that would decide it), its performance rows and
its runs. README.md: the paper index and the results summary (verdict counts, wall times, the
one-line conclusion from meta.toml `verdict`, the measured totals of `reproduce` and
`reproduce-paper`) are rewritten between their <!-- ...:start --> / <!-- ...:end --> markers. A malformed results file is
named with its problems and makes the exit code 1; the other papers are still reported. --check
writes nothing and exits 1 when REPORT.md or README.md is stale.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from freshness import freshness_problems
from schema import SEEDS_NEEDED_CAP, claim_verdict, load_results, perf_figures

PRESETS = ("quick", "paper")


def cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def fmt_number(value: object) -> str:
    """Three significant figures (figures span microseconds to millions); '-' when absent."""
    return f"{value:.3g}" if isinstance(value, (int, float)) else "-"


def collect(root: Path, papers: dict) -> tuple[dict[str, dict[str, dict]], list[str]]:
    """{slug: {preset: results}} for every valid results file, and the problems found."""
    results: dict[str, dict[str, dict]] = {}
    problems = []
    for slug, entry in papers.items():
        for preset in PRESETS:
            path = root / entry["path"] / "results" / f"{preset}.json"
            if not path.exists():
                continue
            data, found = load_results(path, slug)
            problems += [p.replace(str(root) + "/", "") for p in found]
            if data is not None:
                results.setdefault(slug, {})[preset] = data
    return results, problems


# the paper's claims by verdict, then the negative controls ("role": "control"), which must not hold
VERDICT_ORDER = ("holds", "contradicted", "inconclusive", "not held")
CONTROL_ORDER = ("controls not holding", "controls holding")


def counts_of(data: dict | None) -> dict[str, int]:
    counts = dict.fromkeys(VERDICT_ORDER + CONTROL_ORDER, 0)
    for c in (data or {}).get("claims", []):
        v = claim_verdict(c)
        if c.get("role") == "control":
            counts[CONTROL_ORDER[v == "holds"]] += 1
        else:
            counts[v] += 1
    return counts


def verdict_counts(data: dict | None) -> str:
    """'3 hold, 1 contradicted, 2 inconclusive; 2 controls not holding' ('not held': claims in the
    older form; a control that holds means the benchmark cannot tell the paper's ingredient)."""
    if data is None:
        return "-"
    words = {
        "holds": "hold",
        "not held": "not held (old form)",
        "controls holding": "controls **holding** (the check cannot fail)",
    }
    parts = [f"{n} {words.get(v, v)}" for v, n in counts_of(data).items() if n]
    return ", ".join(parts) or "no claims"


def short(text: object, limit: int = 90) -> str:
    text = cell(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def fmt_part(p: dict) -> str:
    lo, hi = p["interval"]
    unit = f" {p['unit']}" if p.get("unit") else ""
    interval = f" [{lo:+.3g}, {hi:+.3g}]" if lo is not None else " [no interval]"
    return f"{p['estimate']:+.3g}{interval}{unit} {p['direction']} {p['threshold']:g} (n={p['n']})"


def claim_cell(c: dict | None) -> str:
    """The verdict and the first number it rests on (older form: the claim's own 'ours' text)."""
    if c is None:
        return "-"
    v = claim_verdict(c)
    if c.get("role") == "control":  # a negative control must not hold
        mark = "control **holds**" if v == "holds" else f"control, {v}"
    else:
        mark = v if v == "holds" else f"**{v}**"
    if c.get("test"):
        more = f" (+{len(c['test']) - 1} parts)" if len(c["test"]) > 1 else ""
        return f"{mark}: {cell(fmt_part(c['test'][0]))}{more}"
    return f"{mark}: {short(c['ours'], 70)}"


def seeds_cell(c: dict | None) -> str:
    n = (c or {}).get("seeds_needed")
    if n is None:
        return "-"
    return f"> {SEEDS_NEEDED_CAP}" if n > SEEDS_NEEDED_CAP else str(n)


def main_figure(root: Path, project: str) -> Path | None:
    figs = sorted((root / project / "results" / "figures").glob("*.png"))
    paper = [f for f in figs if f.name.startswith("paper")]
    return (paper or figs or [None])[0]


def better_mark(ours: object, peer: object, higher_is_better: bool) -> str:
    if not all(isinstance(v, (int, float)) for v in (ours, peer)) or ours == peer:
        return "-"
    return "ours" if (ours > peer) == higher_is_better else "peer"


def performance_rows(runs: dict[str, dict]) -> list[str]:
    """One paper's performance rows, each figure in its own unit."""
    rows = [(preset, p) for preset in PRESETS for p in runs.get(preset, {}).get("performance", [])]
    if not rows:
        return []
    lines = [
        "",
        "Performance (each figure in its own unit; 'better' reads the row's direction):",
        "",
        "| preset | id | what | ours | peer | peer's | unit | ours / peer | better |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for preset, p in rows:
        ours, peer, unit, hib = perf_figures(p)
        # Recomputed here so that every row reads the same way (projects define "ratio" freely).
        numeric = all(isinstance(v, (int, float)) for v in (ours, peer))
        ratio = ours / peer if numeric and peer else None
        direction = "higher is better" if hib else "lower is better"
        lines.append(
            f"| {preset} | `{cell(p['id'])}` | {short(p['what'], 70)} | {fmt_number(ours)} "
            f"| {cell(p.get('peer', '-'))} | {fmt_number(peer)} | {cell(unit)} ({direction}) "
            f"| {fmt_number(ratio)} | {better_mark(ours, peer, hib)} |"
        )
    return lines


def runs_line(slug: str, project: str, runs: dict[str, dict], root: Path) -> str:
    parts = []
    for preset, data in runs.items():
        label = f"{project}/results/{preset}.json"
        stale = freshness_problems(root, project, label, data.get("git_commit"))
        parts.append(
            f"{preset} {fmt_number(data['wall_seconds'])} s on {cell(data['seeds'])} seeds, "
            f"{cell(data.get('environment', {}).get('device', '-'))}, commit "
            f"{cell(data.get('git_commit') or '-')}{' (**stale**)' if stale else ''}"
        )
    return "Runs: " + "; ".join(parts) + "."


def paper_section(slug: str, entry: dict, runs: dict[str, dict], root: Path) -> list[str]:
    counts = "; ".join(f"**{p}**: {verdict_counts(runs.get(p))}" for p in PRESETS)
    lines = ["", f"## {entry['method']} (`{slug}`)", "", f"{counts}."]
    if entry.get("verdict"):
        lines += ["", f"{cell(entry['verdict'])} ([README]({entry['path']}/README.md))"]
    fig = main_figure(root, entry["path"])
    if fig is not None:
        lines += ["", f"![{entry['method']}]({fig.relative_to(root).as_posix()})"]
    lines += [
        "",
        "| claim | paper's number | quick | paper preset | seeds needed |",
        "|---|---|---|---|---|",
    ]
    by_id: dict[str, dict[str, dict]] = {}
    for preset in PRESETS:
        for c in runs.get(preset, {}).get("claims", []):
            by_id.setdefault(c["id"], {})[preset] = c
    for cid, versions in by_id.items():
        quick, paper = versions.get("quick"), versions.get("paper")
        first = quick or paper
        lines.append(
            f"| `{cell(cid)}` | {short(first['paper'])} | {claim_cell(quick)} "
            f"| {claim_cell(paper)} | {seeds_cell(paper or quick)} |"
        )
    lines += performance_rows(runs)
    lines += ["", runs_line(slug, entry["path"], runs, root)]
    return lines


def totals(results: dict[str, dict[str, dict]]) -> dict[str, tuple[int, float]]:
    """preset -> (papers with a file, summed wall seconds of the committed runs)."""
    out = {}
    for preset in PRESETS:
        walls = [runs[preset]["wall_seconds"] for runs in results.values() if preset in runs]
        out[preset] = (len(walls), float(sum(walls)))
    return out


def duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def summary_table(papers: dict, results: dict[str, dict[str, dict]]) -> list[str]:
    lines = [
        "| method | quick | paper preset |",
        "|---|---|---|",
    ]
    for slug, runs in results.items():
        lines.append(
            f"| [{papers[slug]['method']}](#{anchor(papers[slug]['method'], slug)}) "
            f"| {verdict_counts(runs.get('quick'))} | {verdict_counts(runs.get('paper'))} |"
        )
    grand = {p: dict.fromkeys(VERDICT_ORDER + CONTROL_ORDER, 0) for p in PRESETS}
    for runs in results.values():
        for p in PRESETS:
            for v, n in counts_of(runs.get(p)).items():
                grand[p][v] += n
    cells = [", ".join(f"{n} {v}" for v, n in grand[p].items() if n) or "-" for p in PRESETS]
    lines.append(f"| **all** | {cells[0]} | {cells[1]} |")
    return lines


def anchor(method: str, slug: str) -> str:
    """GitHub's anchor of the heading '## {method} (`{slug}`)'."""
    text = f"{method} ({slug})".lower()
    return "".join(ch for ch in text.replace(" ", "-") if ch.isalnum() or ch in "-_")


def report_markdown(papers: dict, results: dict[str, dict[str, dict]], root: Path) -> str:
    lines = [
        "# Results report",
        "",
        "Generated by `tools/report.py` from every `repos/<slug>/results/quick.json` (quick preset:",
        "the method and its baselines work) and `results/paper.json` (paper preset: the smallest CPU",
        "scale where the paper's effect is expected, up to 45 minutes on 2 cores). A claim **holds**",
        "when every interval it rests on lies on the paper's side of its threshold (on >= 3 paired",
        "seeds), is **contradicted** when one lies entirely on the other side, and is",
        "**inconclusive** otherwise; 'seeds needed' estimates the seeds that would decide it.",
        "**not held** marks claims still in the older boolean form (no interval stored). Negative",
        "controls (the same test where the paper's ingredient is missing) are counted apart: each",
        "must not hold. The prose behind each claim is in the paper's README.",
        "",
        "## Summary",
        "",
    ]
    lines += summary_table(papers, results)
    for slug, runs in results.items():
        lines += paper_section(slug, papers[slug], runs, root)
    return "\n".join(lines) + "\n"


def index_table(papers: dict, results: dict[str, dict[str, dict]], root: Path) -> str:
    lines = ["| method | paper | framework | status |", "|---|---|---|---|"]
    for slug, entry in papers.items():
        built = (root / entry["path"] / "pyproject.toml").exists()
        if slug in results:
            have = " and ".join(p for p in PRESETS if p in results[slug])
            status = f"[built]({entry['path']}/README.md), {have} results"
        elif built:
            status = f"[built]({entry['path']}/README.md), no results yet"
        else:
            status = "not built yet"
        lines.append(
            f"| {entry['method']} | [{cell(entry['title'])}]({entry['paper']}) "
            f"| {entry['framework']} | {status} |"
        )
    return "\n".join(lines)


def results_table(papers: dict, results: dict[str, dict[str, dict]]) -> str:
    if not results:
        return "_No paper has results yet._"
    lines = [
        "| method | quick | quick wall (s) | paper preset | paper wall (s) | conclusion |",
        "|---|---|---|---|---|---|",
    ]
    for slug, runs in results.items():
        quick, paper = runs.get("quick"), runs.get("paper")
        lines.append(
            f"| {papers[slug]['method']} | {verdict_counts(quick)} "
            f"| {fmt_number(quick['wall_seconds']) if quick else '-'} "
            f"| {verdict_counts(paper)} | {fmt_number(paper['wall_seconds']) if paper else '-'} "
            f"| {cell(papers[slug].get('verdict', '-'))} |"
        )
    tot = totals(results)
    lines += [
        "",
        (
            f"Measured totals of the committed runs: `./run -s reproduce` (quick) "
            f"{duration(tot['quick'][1])} over {tot['quick'][0]} papers, "
            f"`./run -s reproduce-paper` {duration(tot['paper'][1])} over {tot['paper'][0]} "
            "papers, one after the other on the machines that wrote them."
        ),
        "",
        "Every claim with the paper's number beside ours: [REPORT.md](REPORT.md).",
    ]
    return "\n".join(lines)


def replace_between(text: str, name: str, body: str) -> str:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start not in text or end not in text:
        raise ValueError(f"README.md lacks the markers {start} ... {end}")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when outputs are stale"
    )
    args = ap.parse_args(argv)
    root = args.root.resolve()
    papers = tomllib.loads((root / "meta.toml").read_text())["papers"]
    results, problems = collect(root, papers)
    report = report_markdown(papers, results, root)
    readme_path = root / "README.md"
    readme = readme_path.read_text()
    try:
        readme = replace_between(readme, "index", index_table(papers, results, root))
        readme = replace_between(readme, "results", results_table(papers, results))
    except ValueError as exc:
        problems.append(str(exc))
    for p in problems:
        print(p, file=sys.stderr)
    outputs = {root / "REPORT.md": report, readme_path: readme}
    if args.check:
        stale = [p.name for p, text in outputs.items() if not p.exists() or p.read_text() != text]
        for name in stale:
            print(f"{name} is stale: run ./run -s report", file=sys.stderr)
        return 1 if stale or problems else 0
    for path, text in outputs.items():
        path.write_text(text)
    counts = []
    for preset in PRESETS:
        docs = [runs[preset] for runs in results.values() if preset in runs]
        tally = dict.fromkeys(VERDICT_ORDER + CONTROL_ORDER, 0)
        for d in docs:
            for v, n in counts_of(d).items():
                tally[v] += n
        found = ", ".join(f"{n} {v}" for v, n in tally.items() if n)
        counts.append(f"{preset}: {len(docs)} papers, {found}")
    print(f"report: {'; '.join(counts)} -> REPORT.md, README.md")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
