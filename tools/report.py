#!/usr/bin/env python3
"""Aggregate every repos/<slug>/results/{quick,paper}.json into REPORT.md and the README's tables.

    python3 tools/report.py [--root DIR] [--check]

REPORT.md: one row per claim with the quick and the paper preset side by side (matched by claim
id), the performance figures grouped by paper with their units, and one row per run (preset, wall
time, commit, whether the file is fresh). README.md: the paper index and the results summary are
rewritten between their <!-- ...:start --> / <!-- ...:end --> markers. A malformed results file is
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
from schema import load_results, perf_figures

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


def holds_mark(claim: dict | None) -> str:
    if claim is None:
        return "-"
    return "yes" if claim["holds"] else "**no**"


def claims_section(papers: dict, results: dict[str, dict[str, dict]]) -> list[str]:
    lines = [
        "## Claims",
        "",
        "| paper | claim | statement | paper's number | ours (quick) | quick | ours (paper preset) | paper preset |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for slug, runs in results.items():
        by_id: dict[str, dict[str, dict]] = {}
        for preset in PRESETS:
            for c in runs.get(preset, {}).get("claims", []):
                by_id.setdefault(c["id"], {})[preset] = c
        for cid, versions in by_id.items():
            first = versions.get("quick") or versions["paper"]
            quick, paper = versions.get("quick"), versions.get("paper")
            lines.append(
                f"| {papers[slug]['method']} | `{cell(cid)}` | {cell(first['statement'])} "
                f"| {cell(first['paper'])} | {cell(quick['ours']) if quick else '-'} "
                f"| {holds_mark(quick)} | {cell(paper['ours']) if paper else '-'} "
                f"| {holds_mark(paper)} |"
            )
    return lines


def better_mark(ours: object, peer: object, higher_is_better: bool) -> str:
    if not all(isinstance(v, (int, float)) for v in (ours, peer)) or ours == peer:
        return "-"
    return "ours" if (ours > peer) == higher_is_better else "peer"


def performance_section(papers: dict, results: dict[str, dict[str, dict]]) -> list[str]:
    lines: list[str] = []
    for slug, runs in results.items():
        rows = [
            (preset, p) for preset in PRESETS for p in runs.get(preset, {}).get("performance", [])
        ]
        if not rows:
            continue
        lines += [
            "",
            f"### {papers[slug]['method']}",
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
                f"| {preset} | `{cell(p['id'])}` | {cell(p['what'])} | {fmt_number(ours)} "
                f"| {cell(p.get('peer', '-'))} | {fmt_number(peer)} | {cell(unit)} ({direction}) "
                f"| {fmt_number(ratio)} | {better_mark(ours, peer, hib)} |"
            )
    if lines:
        lines = [
            "",
            "## Performance",
            "",
            "Each figure in its own unit; 'better' reads the row's direction.",
        ] + lines
    return lines


def runs_section(papers: dict, results: dict[str, dict[str, dict]], root: Path) -> list[str]:
    lines = [
        "",
        "## Runs",
        "",
        "| paper | preset | created | commit | fresh | wall (s) | seeds | device | figures |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for slug, runs in results.items():
        project = papers[slug]["path"]
        figdir = root / project / "results" / "figures"
        for preset, data in runs.items():
            pngs = sorted(figdir.glob("*.png"))
            mine = [f for f in pngs if f.name.startswith("paper-") == (preset == "paper")]
            figs = ", ".join(f"[{f.stem}]({f.relative_to(root).as_posix()})" for f in mine)
            label = f"{project}/results/{preset}.json"
            stale = freshness_problems(root, project, label, data.get("git_commit"))
            env = data.get("environment", {})
            lines.append(
                f"| {papers[slug]['method']} | {preset} | {cell(data['created'])} "
                f"| {cell(data.get('git_commit') or '-')} | {'**no**' if stale else 'yes'} "
                f"| {fmt_number(data['wall_seconds'])} | {cell(data['seeds'])} "
                f"| {cell(env.get('device', '-'))} | {figs or '-'} |"
            )
    return lines


def report_markdown(papers: dict, results: dict[str, dict[str, dict]], root: Path) -> str:
    lines = [
        "# Results report",
        "",
        "Generated by `tools/report.py` from every `repos/<slug>/results/quick.json` (quick preset,",
        "minutes on a CPU) and `results/paper.json` (paper preset: the smallest CPU scale where the",
        "paper's effect is expected, up to 45 minutes on 2 cores). Each `holds` is computed by that",
        "paper's benchmark from its measured metrics; '-' means the preset does not have that claim",
        "(or has not been run).",
        "",
    ]
    lines += claims_section(papers, results)
    lines += performance_section(papers, results)
    lines += runs_section(papers, results, root)
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
            f"| {entry['method']} | [{cell(entry['title'])}]({entry['paper']}) | {entry['framework']} | {status} |"
        )
    return "\n".join(lines)


def held(data: dict | None) -> str:
    if data is None:
        return "-"
    return f"{sum(c['holds'] for c in data['claims'])}/{len(data['claims'])}"


def results_table(papers: dict, results: dict[str, dict[str, dict]]) -> str:
    if not results:
        return "_No paper has results yet._"
    lines = [
        "| method | quick: claims hold | quick wall (s) | paper preset: claims hold | paper wall (s) | claims not holding (quick / paper) |",
        "|---|---|---|---|---|---|",
    ]
    for slug, runs in results.items():
        quick, paper = runs.get("quick"), runs.get("paper")
        failing = []
        for preset, data in (("quick", quick), ("paper", paper)):
            if data is not None:
                failing += [f"`{c['id']}` ({preset})" for c in data["claims"] if not c["holds"]]
        lines.append(
            f"| {papers[slug]['method']} | {held(quick)} | {fmt_number(quick['wall_seconds']) if quick else '-'} "
            f"| {held(paper)} | {fmt_number(paper['wall_seconds']) if paper else '-'} "
            f"| {', '.join(failing) or '-'} |"
        )
    lines += ["", "Every claim with the paper's number beside ours: [REPORT.md](REPORT.md)."]
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
        n = sum(len(d["claims"]) for d in docs)
        k = sum(c["holds"] for d in docs for c in d["claims"])
        counts.append(f"{preset}: {len(docs)} papers, {k}/{n} claims hold")
    print(f"report: {'; '.join(counts)} -> REPORT.md, README.md")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
