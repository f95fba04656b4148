"""Markdown tables from a results file (`python -m regent.report results/quick.json`), so that
the README's numbers are the file's numbers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .train import METHODS


def claims_table(doc: dict) -> str:
    rows = ["| claim | ours | negative control | verdict |", "|---|---|---|---|"]
    for c in doc["claims"]:
        verdict = c.get("verdict", "holds" if c["holds"] else "does not hold")
        if "seeds_needed" in c:
            verdict += f" (seeds needed: {c['seeds_needed']})"
        rows.append(f"| `{c['id']}` | {c['ours']} | {c.get('control', '')} | {verdict} |")
    return "\n".join(rows)


def returns_table(doc: dict, scope: str = "") -> str:
    """Mean normalised return over seeds x tasks x episodes; std over seeds."""
    ks = doc["config"]["demo_counts"]
    rows = ["| method | " + " | ".join(f"{k} demos" for k in ks) + " |"]
    rows.append("|---" * (len(ks) + 1) + "|")
    for m in METHODS:
        cells = []
        for k in ks:
            s = doc["metrics"][m][f"normalized_return/{scope}k{k}"]
            cells.append(f"{s['mean']:.2f} ± {s['std']:.2f}")
        rows.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def paired_table(doc: dict, scope: str = "") -> str:
    """Method - R&P, paired over episodes, mean [95% bootstrap interval]."""
    ks = doc["config"]["demo_counts"]
    rows = ["| minus R&P | " + " | ".join(f"{k} demos" for k in ks) + " |"]
    rows.append("|---" * (len(ks) + 1) + "|")
    for m in METHODS:
        if m == "R&P":
            continue
        cells = []
        for k in ks:
            iv = doc["paired_vs_rp"][f"{m} - R&P/{scope}k{k}"]
            cells.append(f"{iv['mean']:+.2f} [{iv['lo']:+.2f}, {iv['hi']:+.2f}]")
        rows.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def ablation_table(doc: dict) -> str:
    sizes = doc["config"]["ablation_sizes"]
    rows = ["| scope | " + " | ".join(f"{n + 1} states" for n in sizes) + " |"]
    rows.append("|---" * (len(sizes) + 1) + "|")
    for scope in ["", *(f"{f}/" for f in doc["config"]["families"])]:
        abl = doc["metrics"]["REGENT (context ablation)"]
        cells = [f"{abl[f'normalized_return/{scope}n{n}']['mean']:.2f}" for n in sizes]
        rows.append(f"| {scope.rstrip('/') or 'both'} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def metaworld_table(doc: dict) -> str:
    """Held-out Meta-World tasks: normalised return / success rate per method and count, beside
    the paper's 100-demo numbers, with the scripted expert (oracle), the noisy demonstrator and
    random actions (floor)."""
    mw = doc["metaworld"]
    ks = doc["config"]["mw_demo_counts"]
    methods = ("REGENT", "R&P", "MT-BC", "BC-scratch", "REGENT-untrained")
    head = [f"{m} k={k}" for m in methods for k in ks]
    rows = [
        "| task | paper REGENT | paper R&P | " + " | ".join(head) + " | expert | demos | random |"
    ]
    rows.append("|---" * (len(head) + 6) + "|")
    for task, row in mw["tasks"].items():
        paper = row.get("paper (REGENT, R&P), 100 demos", ("", ""))
        cells = [
            f"{row[f'{m}/k{k}']['normalized_return']:.2f} / {row[f'{m}/k{k}']['success_rate']:.2f}"
            for m in methods
            for k in ks
        ]
        extra = [
            f"{row[w]['success_rate']:.2f}" if w in row else ""
            for w in ("scripted expert", "demonstrator", "random")
        ]
        rows.append(f"| {task} | {paper[0]} | {paper[1]} | " + " | ".join(cells + extra) + " |")
    diffs = [
        f"{key}: {iv['mean']:+.2f} [{iv['lo']:+.2f}, {iv['hi']:+.2f}]"
        for key, iv in mw["paired_vs_rp"].items()
    ]
    seen = [f"{key} {v:.2f}" for key, v in mw["seen_pretraining_tasks"].items()]
    rp = [
        f"{task} "
        + ", ".join(f"{k} {v:.2f}" if v is not None else f"{k} -" for k, v in row.items())
        for task, row in mw.get("rp_row", {}).items()
    ]
    rp_text = "\n\nR&P row (paper's counts): " + "; ".join(rp) if rp else ""
    return (
        "\n".join(rows) + "\n\n" + "; ".join(diffs) + "\n\nseen tasks: " + "; ".join(seen) + rp_text
    )


def report(doc: dict) -> str:
    parts = [claims_table(doc), returns_table(doc), paired_table(doc)]
    for family in doc["config"]["families"]:
        parts += [f"{family}:", returns_table(doc, f"{family}/"), paired_table(doc, f"{family}/")]
    parts.append(ablation_table(doc))
    if "metaworld" in doc:
        parts.append(metaworld_table(doc))
    return "\n\n".join(parts)


if __name__ == "__main__":
    print(report(json.loads(Path(sys.argv[1]).read_text())))
