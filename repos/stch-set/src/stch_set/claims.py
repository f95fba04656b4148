"""Claims computed from the per-seed metrics, each with a structured paired test and a negative
control, in two claim sets side by side (issue 61):

- equal tuning: every method at its own learning rate, chosen on validation instances from the same
  grid with the same budget (prefix `{problem}/`);
- official protocol: the official scripts' protocol, lr 1e-2 for every method from the official
  initialisation (prefix `{problem}/official-protocol/`, ids `official-...`).

Every part compares STCH-Set with one baseline on the same seeds (same instance, same initial
solutions): the 95% paired t-interval of the per-seed log ratio log(baseline / STCH-Set) against
log(factor) (results.part_from_paired), so each claim gets the three-way verdict and, when
undecided, seeds_needed. Objectives that can be <= 0 (user problems) are compared on the raw
difference (factor 1 only). The negative control puts the untrained initial solutions in
STCH-Set's place and runs the same test; its verdict must not be `holds`.
"""

from __future__ import annotations

import math

import numpy as np

from .results import (
    claim,
    paired_interval,
    part_from_paired,
    part_verdict,
    seeds_needed,
    verdict,
)
from .stats import describe, paired

OURS = "STCH-Set"
FLOOR = "untrained initial set"
"""The initial solutions, never optimised: the floor row and the negative control."""
ORACLE = "ground-truth centres"
"""The K centres (linear) or teacher networks (nonlinear) that generated the data."""
OFFICIAL_KEY = "official-protocol"
"""Metric infix of the official-protocol runs: official initialisation, the official lr for
every method (config.official_lr), the preset's steps."""
SET_BASELINES = ("TCH-Set", "SoM")
PREF_BASELINES = ("STCH (random pref)", "TCH (random pref)", "LS (random pref)")
REFERENCE_ROWS = (OURS, FLOOR, ORACLE)
# Official script, 3 seeds, 10k steps (measured for the project brief): worst / average.
OFFICIAL = {
    "quadratic": {"STCH-Set": (0.334, 0.0748), "TCH-Set": (0.779, 0.250), "SoM": (0.855, 0.0830)},
    "linear": {"STCH-Set": (2.86, 0.416), "TCH-Set": (3.05, 0.483), "SoM": (7.03, 0.335)},
}
NO_PAPER = "no official number in the brief (the paper's table was not checked)"


def values(metrics: dict, label: str, key: str) -> list[float] | None:
    entry = metrics.get(label, {}).get(key)
    return None if entry is None else entry["values"]


def ratio_part(
    baseline: list[float], mine: list[float], label: str, key: str, factor: float
) -> dict:
    """One structured part: baseline is above `mine` by `factor` (log ratio > log factor), or, for
    objectives <= 0, baseline - mine > 0 (factor 1 only)."""
    base, ours = np.asarray(baseline, dtype=float), np.asarray(mine, dtype=float)
    if (base > 0).all() and (ours > 0).all():
        diff = paired_interval(list(np.log(base)), list(np.log(ours)))
        what = f"log({label} / {OURS}) of {key}"
        return part_from_paired(what, diff, math.log(factor), ">", "log ratio")
    if factor != 1.0:
        raise ValueError(f"a ratio factor {factor} needs positive objectives ({key}, {label})")
    diff = paired_interval(list(base), list(ours))
    return part_from_paired(f"{label} - {OURS} of {key}", diff, 0.0, ">")


def parts(metrics: dict, key: str, others: list[str], factor: float, ours: str = OURS) -> list:
    mine = values(metrics, ours, key)
    return [ratio_part(values(metrics, lab, key), mine, lab, key, factor) for lab in others]


def make_claim(
    cid: str, statement: str, paper: str, metrics: dict, key: str, others: list[str], factor: float
) -> dict | None:
    """The claim, or None when no baseline of it was run (nothing to compare)."""
    if not others:
        return None
    test = parts(metrics, key, others, factor)
    control = verdict(parts(metrics, key, others, factor, ours=FLOOR))
    mine = values(metrics, OURS, key)
    cmps = {lab: paired(values(metrics, lab, key), mine) for lab in others}
    ours = f"STCH-Set mean {metrics[OURS][key]['mean']:.4g}; "
    ours += "; ".join(describe(lab, c) for lab, c in cmps.items())
    ours += f". Negative control ({FLOOR} in STCH-Set's place): {control}"
    return claim(
        cid,
        statement,
        paper,
        ours,
        test=test,
        negative_control={
            "what": f"the same test with the {FLOOR} in STCH-Set's place; must not hold",
            "verdict": control,
            "holds": control == "holds",
        },
        threshold=f"every ratio's 95% interval above {factor}",
    )


def labels_with(metrics: dict, key: str, among: tuple[str, ...] | None = None) -> list[str]:
    return [
        lab
        for lab in metrics
        if key in metrics[lab] and lab not in REFERENCE_ROWS and (among is None or lab in among)
    ]


def official_text(prob: str, index: int) -> str:
    paper = OFFICIAL.get(prob)
    if paper is None:
        return NO_PAPER
    return "official script, 3 seeds, 10k steps: " + ", ".join(
        f"{lab} {v[index]}" for lab, v in paper.items()
    )


def sweep_key(problem: str, k: int, m: int) -> str:
    """Metric prefix of one point of the K (and m) sweep."""
    return f"{problem}-K{k}-m{m}"


def compute_claims(
    problems: tuple[str, ...], metrics: dict, sweeps: dict[str, list[tuple[int, int]]] | None = None
) -> list[dict]:
    """Equal-tuning claims per problem, then the official-protocol claims, then one claim per
    swept problem (sweeps: {problem: [(K, m), ...]})."""
    claims = []
    for p in problems:
        worst, average = f"{p}/worst", f"{p}/average"
        if OURS not in metrics or worst not in metrics[OURS]:
            continue
        # Contradicted/inconclusive if any method's worst case is not above STCH-Set's with
        # confidence (a tie, a 2-of-3 split with a wide interval, or a baseline that wins).
        claims.append(
            make_claim(
                f"lowest-worst-{p}",
                f"equal tuning, {p}: STCH-Set's worst case max_i min_k f_i is below every other "
                "method's",
                official_text(p, 0),
                metrics,
                worst,
                labels_with(metrics, worst),
                1.0,
            )
        )
        # The brief's gate: SoM and each preference baseline >= 1.5x worse (the official
        # quadratic ratios are 2.56x for SoM, 12.5x for STCH (pref)).
        claims.append(
            make_claim(
                f"worst-1.5x-{p}",
                f"equal tuning, {p}: SoM's and each random-preference baseline's worst case is at "
                "least 1.5x STCH-Set's",
                official_text(p, 0),
                metrics,
                worst,
                labels_with(metrics, worst, ("SoM", *PREF_BASELINES)),
                1.5,
            )
        )
        # Replaces 'within 1.3x of SoM': SoM minimises the average itself (reported in `paired`);
        # TCH-Set and the preference runs are the methods STCH-Set should beat on both metrics.
        claims.append(
            make_claim(
                f"average-beats-tch-set-{p}",
                f"equal tuning, {p}: STCH-Set's average case mean_i min_k f_i is below TCH-Set's "
                "and each random-preference baseline's",
                official_text(p, 1),
                metrics,
                average,
                labels_with(metrics, average, ("TCH-Set", *PREF_BASELINES)),
                1.0,
            )
        )
    for p in problems:
        worst, average = f"{p}/{OFFICIAL_KEY}/worst", f"{p}/{OFFICIAL_KEY}/average"
        if OURS not in metrics or worst not in metrics[OURS]:
            continue
        claims.append(
            make_claim(
                f"official-lowest-worst-{p}",
                f"official protocol (lr 1e-2 for every method, official initialisation), {p}: "
                "STCH-Set's worst case is below TCH-Set's and SoM's",
                official_text(p, 0),
                metrics,
                worst,
                labels_with(metrics, worst, SET_BASELINES),
                1.0,
            )
        )
        claims.append(
            make_claim(
                f"official-average-beats-tch-set-{p}",
                f"official protocol, {p}: STCH-Set's average case is below TCH-Set's",
                official_text(p, 1),
                metrics,
                average,
                labels_with(metrics, average, ("TCH-Set",)),
                1.0,
            )
        )
    for p, points in (sweeps or {}).items():
        keys = [f"{sweep_key(p, k, m)}/worst" for k, m in points]
        if not keys or any(key not in metrics.get(OURS, {}) for key in keys):
            continue
        test, control, texts, by_point = [], [], [], []
        for (k, m), key in zip(points, keys):
            others = labels_with(metrics, key, SET_BASELINES)
            point = parts(metrics, key, others, 1.0)
            test += point
            control += parts(metrics, key, others, 1.0, ours=FLOOR)
            mine = values(metrics, OURS, key)
            texts += [
                f"K={k} m={m}: " + part_text(lab, part, values(metrics, lab, key), mine)
                for lab, part in zip(others, point)
            ]
            entry = {
                "k": k,
                "m": m,
                "verdict": verdict(point) if point else "inconclusive",
                "contradicted_by": [
                    lab for lab, part in zip(others, point) if part_verdict(part) == "contradicted"
                ],
            }
            needed = [n for n in map(seeds_needed, point) if n is not None]
            if entry["verdict"] == "inconclusive" and needed:
                entry["seeds_needed"] = max(needed)
            by_point.append(entry)
        if not test:
            continue
        grid = ", ".join(f"K={k} m={m}" for k, m in points)
        summary = "; ".join(
            f"{verdict_name} at "
            + ", ".join(
                f"K={b['k']}"
                + (f" ({', '.join(b['contradicted_by'])})" if b["contradicted_by"] else "")
                for b in by_point
                if b["verdict"] == verdict_name
            )
            for verdict_name in ("contradicted", "inconclusive", "holds")
            if any(b["verdict"] == verdict_name for b in by_point)
        )
        control_verdict = verdict(control)
        claims.append(
            claim(
                f"k-sweep-lowest-worst-{p}",
                f"equal tuning (lr tuned at the preset's K), {p} at {grid}: STCH-Set's worst case "
                "is below TCH-Set's and SoM's at every K",
                "the paper's claim: few solutions (K << m) cover many objectives, STCH-Set best "
                "across K (its table values were not checked; see the README)",
                f"By K: {summary}. "
                + "; ".join(texts)
                + f". Negative control ({FLOOR}): {control_verdict}",
                test=test,
                by_k=by_point,
                negative_control={
                    "what": f"the same test with the {FLOOR} in STCH-Set's place; must not hold",
                    "verdict": control_verdict,
                    "holds": control_verdict == "holds",
                },
            )
        )
    return [c for c in claims if c is not None]


def part_text(label: str, part: dict, baseline: list[float], mine: list[float]) -> str:
    """One sweep part in words, each number labelled with its scale: 'TCH-Set / STCH-Set ratio
    0.182x [0.0368, 0.899] (log ratio -1.70 [-3.30, -0.106]), STCH-Set lower on 0/3 seeds,
    contradicted'; a part on the raw difference (objectives <= 0) gives the difference."""
    lo, hi = part["interval"]
    wins = int((np.asarray(mine, dtype=float) < np.asarray(baseline, dtype=float)).sum())
    if part["unit"] == "log ratio":
        ratio = f"ratio {math.exp(part['estimate']):.3g}x" + (
            "" if lo is None else f" [{math.exp(lo):.3g}, {math.exp(hi):.3g}]"
        )
        log = f"log ratio {part['estimate']:+.3g}" + (
            "" if lo is None else f" [{lo:+.3g}, {hi:+.3g}]"
        )
        number = f"{label} / {OURS} {ratio} ({log})"
    else:
        number = f"{label} - {OURS} difference {part['estimate']:+.3g}" + (
            "" if lo is None else f" [{lo:+.3g}, {hi:+.3g}]"
        )
    return f"{number}, {OURS} lower on {wins}/{len(mine)} seeds, {part_verdict(part)}"


def paired_table(problems: tuple[str, ...], metrics: dict) -> dict:
    """Every paired comparison the README reports: each method against STCH-Set on both
    metrics, the floor and oracle rows, and the official protocol against equal tuning."""
    table: dict = {}
    for p in problems:
        for metric in ("worst", "average"):
            for prefix in (p, f"{p}/{OFFICIAL_KEY}"):
                key = f"{prefix}/{metric}"
                mine = values(metrics, OURS, key)
                if mine is None:
                    continue
                for lab in metrics:
                    other = values(metrics, lab, key)
                    if lab != OURS and other is not None:
                        table.setdefault(key, {})[lab] = paired(other, mine)
            for lab in metrics:
                ours_init = values(metrics, lab, f"{p}/{metric}")
                official = values(metrics, lab, f"{p}/{OFFICIAL_KEY}/{metric}")
                if ours_init is not None and official is not None:
                    key = f"{p}/{metric}: official protocol vs equal tuning"
                    table.setdefault(key, {})[lab] = paired(official, ours_init)
    return table
