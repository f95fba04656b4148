"""Claims computed from the per-seed metrics, each with paired intervals and a negative control.

Every check compares STCH-Set with a baseline on the same seeds (same instance, same initial
solutions) through the 95% t-interval of the per-seed ratio baseline / STCH-Set (stats.paired).
The negative control puts the untrained initial solutions in STCH-Set's place and runs the same
check; it must come out False, or the check cannot tell optimisation from no optimisation.
"""

from __future__ import annotations

from .stats import describe, lower_with_confidence, paired

OURS = "STCH-Set"
FLOOR = "untrained initial set"
"""The initial solutions, never optimised: the floor row and the negative control."""
ORACLE = "ground-truth centres"
"""The K centres (linear) or teacher networks (nonlinear) that generated the data."""
OFFICIAL_KEY = "official-init"
"""Metric infix of runs started from the official scripts' initialisation."""
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


def check(
    metrics: dict, key: str, others: list[str], factor: float, ours: str = OURS
) -> tuple[bool, dict[str, dict]]:
    """Is `ours` lower than every label in `others` by `factor` with confidence?"""
    mine = values(metrics, ours, key)
    cmps = {lab: paired(values(metrics, lab, key), mine) for lab in others}
    return bool(cmps) and all(lower_with_confidence(c, factor) for c in cmps.values()), cmps


def make_claim(
    cid: str, statement: str, paper: str, metrics: dict, key: str, others: list[str], factor: float
) -> dict | None:
    """The claim, or None when no baseline of it was run (nothing to compare)."""
    if not others:
        return None
    holds, cmps = check(metrics, key, others, factor)
    control, _ = check(metrics, key, others, factor, ours=FLOOR)
    mean = metrics[OURS][key]["mean"]
    ours = f"STCH-Set mean {mean:.4g}; " + "; ".join(describe(lab, c) for lab, c in cmps.items())
    ours += f". Negative control ({FLOOR} in STCH-Set's place): holds={control}"
    return {
        "id": cid,
        "statement": statement,
        "paper": paper,
        "ours": ours,
        "holds": holds,
        "negative_control": {"what": FLOOR, "holds": control},
        "threshold": f"every ratio's 95% interval above {factor}",
    }


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


def compute_claims(problems: tuple[str, ...], metrics: dict) -> list[dict]:
    claims = []
    for p in problems:
        worst, average = f"{p}/worst", f"{p}/average"
        if OURS not in metrics or worst not in metrics[OURS]:
            continue
        # Fails if any method's worst case is not above STCH-Set's with confidence (a tie, a
        # 2-of-3 split with a wide interval, or a baseline that wins).
        claims.append(
            make_claim(
                f"lowest-worst-{p}",
                f"{p}: STCH-Set's worst case max_i min_k f_i is below every other method's",
                official_text(p, 0),
                metrics,
                worst,
                labels_with(metrics, worst),
                1.0,
            )
        )
        # The brief's gate: fails unless SoM and each preference baseline are >= 1.5x worse with
        # confidence (the official quadratic ratios are 2.56x for SoM, 12.5x for STCH (pref)).
        claims.append(
            make_claim(
                f"worst-1.5x-{p}",
                f"{p}: SoM's and each random-preference baseline's worst case is at least 1.5x "
                "STCH-Set's",
                official_text(p, 0),
                metrics,
                worst,
                labels_with(metrics, worst, ("SoM", *PREF_BASELINES)),
                1.5,
            )
        )
        # Replaces 'within 1.3x of SoM': SoM minimises the average itself (our reference for that
        # metric, reported in `paired`), while TCH-Set and the preference runs are the methods
        # STCH-Set should beat on both metrics. Fails if any of them has a lower or tied average.
        claims.append(
            make_claim(
                f"average-beats-tch-set-{p}",
                f"{p}: STCH-Set's average case mean_i min_k f_i is below TCH-Set's and each "
                "random-preference baseline's",
                official_text(p, 1),
                metrics,
                average,
                labels_with(metrics, average, ("TCH-Set", *PREF_BASELINES)),
                1.0,
            )
        )
        official = f"{p}/{OFFICIAL_KEY}/worst"
        if official in metrics[OURS]:
            claims.append(
                make_claim(
                    f"lowest-worst-{p}-official-init",
                    f"{p}, official initialisation: STCH-Set's worst case is below TCH-Set's "
                    "and SoM's",
                    official_text(p, 0),
                    metrics,
                    official,
                    labels_with(metrics, official),
                    1.0,
                )
            )
    return [c for c in claims if c is not None]


def paired_table(problems: tuple[str, ...], metrics: dict) -> dict:
    """Every paired comparison the README reports: each method against STCH-Set on both
    metrics, the floor and oracle rows, and the official initialisation against ours."""
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
                    key = f"{p}/{metric}: official init vs ours"
                    table.setdefault(key, {})[lab] = paired(official, ours_init)
    return table
