"""The three claims, each a structured test (CONVENTIONS.md section 6) on per-seed metrics paired
with the original model or a rival over the same seeds, with a negative control that must fail.

- forget: CoGFD lowers the forget rate by more than FORGET_DROP_MIN points on the erase-set
  prompts and on held-out synonyms (when the combination has any outside the erase set).
  Control: `cogfd_noerase`, the same loss without exp(-L_e).
- retain: CoGFD's retain accuracy drops by less than RETAIN_DROP_MAX points on the sub-concepts
  and on other combinations. Control: `naive` (ESD-x on "red" then "circle").
- pareto: CoGFD dominates every rival on the forget/retain plane, floor-free: its forget drop is
  higher and its retain drop lower than the rival's, each paired over seeds (threshold 0).
  Control: the same test with `cogfd_noerase` in CoGFD's place.

Each part is the paired mean difference with its 95% t interval over seeds; a claim holds when
every part's interval lies on the claimed side (on >= 3 seeds), is contradicted when one lies
entirely on the other side, and is inconclusive otherwise (results.verdict).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .results import claim, paired_interval, part_from_paired

FORGET_DROP_MIN = 50.0
"""Points: the paper shows the combination essentially gone (CLIP forget score near the
unconditional level), so at least half of the judge's hits must disappear."""
RETAIN_DROP_MAX = 10.0
"""Points: the paper's retain CLIP scores stay within a few percent of the original's."""
RIVALS = ("cogfd_nograph", "esd_x", "ca", "uce", "naive")
BOOTSTRAP = 2000


def interval(values: list[float], seed: int = 0) -> tuple[float, float, float]:
    """Mean and 95% percentile-bootstrap interval of the mean (fixed resampling seed); kept for
    the README's per-method tables, the verdicts use the paired t interval."""
    arr = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, len(arr), (BOOTSTRAP, len(arr)))].mean(1)
    return float(arr.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _values(metrics: dict, method: str, key: str) -> list[float]:
    return metrics[method][key]["values"]


def _text(parts: list[dict]) -> str:
    out = []
    for p in parts:
        lo, hi = p["interval"]
        span = "n/a" if lo is None else f"[{lo:.1f}, {hi:.1f}]"
        out.append(
            f"{p['what']}: {p['estimate']:.1f} {span} (claim {p['direction']} {p['threshold']:g})"
        )
    return "; ".join(out)


def forget_parts(metrics: dict, method: str) -> list[dict]:
    """original - method forget rate, erase set and (if any) held-out synonyms."""
    parts = [
        part_from_paired(
            f"{method} forget-rate drop, erase set (original - edited)",
            paired_interval(
                _values(metrics, "original", "forget_rate"),
                _values(metrics, method, "forget_rate"),
            ),
            FORGET_DROP_MIN,
            ">",
            "points",
        )
    ]
    if "forget_rate_held_out" in metrics["original"]:
        parts.append(
            part_from_paired(
                f"{method} forget-rate drop, held-out synonyms",
                paired_interval(
                    _values(metrics, "original", "forget_rate_held_out"),
                    _values(metrics, method, "forget_rate_held_out"),
                ),
                FORGET_DROP_MIN,
                ">",
                "points",
            )
        )
    return parts


def retain_parts(metrics: dict, method: str) -> list[dict]:
    """original - method retain accuracy on the sub-concepts and on other combinations."""
    return [
        part_from_paired(
            f"{method} retain-accuracy drop, {label} (original - edited)",
            paired_interval(_values(metrics, "original", key), _values(metrics, method, key)),
            RETAIN_DROP_MAX,
            "<",
            "points",
        )
        for key, label in (("retain_acc_sub", "sub-concepts"), ("retain_acc_other", "other combos"))
    ]


def pareto_parts(metrics: dict, method: str) -> list[dict]:
    """Against every rival that was run: forget drop higher (> 0) and retain drop lower (< 0)."""
    parts = []
    for rival in ("cogfd",) + RIVALS:
        if rival == method or rival not in metrics:
            continue
        for key, direction, label in (
            ("forget_drop", ">", "forget drop"),
            ("retain_drop", "<", "retain drop"),
        ):
            diff = paired_interval(_values(metrics, method, key), _values(metrics, rival, key))
            parts.append(
                part_from_paired(f"{method} - {rival} {label}", diff, 0.0, direction, "points")
            )
    return parts


CLAIMS = (
    (
        "cogfd-forget-drop",
        (
            f"CoGFD lowers the judge's forget rate (red AND circle) by more than {FORGET_DROP_MIN:g} "
            "points on the erase-set prompts and on held-out synonym prompts (paired with the "
            "original over seeds)"
        ),
        (
            "CoGFD erases the combination (lowest CLIP score on forget prompts among erasers, "
            "HarmfulCmb)"
        ),
        forget_parts,
        "cogfd_noerase",
    ),
    (
        "cogfd-retains-sub-concepts",
        (
            f"CoGFD's retain accuracy drops by less than {RETAIN_DROP_MAX:g} points on the "
            "sub-concepts (red, circle) and on other combinations (red square, blue circle, ...)"
            " (paired with the original over seeds)"
        ),
        "sub-concepts stay generable (highest retain CLIP score among erasers)",
        retain_parts,
        "naive",
    ),
    (
        "cogfd-pareto-dominates",
        (
            "CoGFD dominates every other eraser on the forget/retain plane at the tuned settings: "
            "higher forget drop and lower retain drop than each rival, each paired over seeds "
            "(threshold 0, no floor; replaces the erase-retain ratio)"
        ),
        "CoGFD has the best erase-retain score |dCLIP_forget / dCLIP_retain| on HarmfulCmb",
        pareto_parts,
        "cogfd_noerase",
    ),
)


def claims_from(metrics: dict) -> list[dict[str, Any]]:
    """Every claim whose comparison was run, with its structured test; its negative control (the
    same test with the control method in CoGFD's place, which must not hold) when it was run."""
    out = []
    for cid, statement, paper, make_parts, control in CLAIMS:
        test = make_parts(metrics, "cogfd")
        if not test:  # nothing it compares was run (e.g. no rival eraser): no claim to read
            continue
        c = claim(cid, statement, paper, _text(test), test=test)
        if control in metrics and make_parts(metrics, control):
            ctrl = claim(
                f"{cid}-control",
                f"negative control: {control} in CoGFD's place must not hold",
                "-",
                _text(make_parts(metrics, control)),
                test=make_parts(metrics, control),
            )
            c["negative_control"] = {
                "method": control,
                "ours": ctrl["ours"],
                "verdict": ctrl["verdict"],
                "holds": ctrl["holds"],
                "fails_as_expected": not ctrl["holds"],
            }
        out.append(c)
    return out
