"""The three claims, each computed from per-seed metrics, paired with a bootstrap interval and
shown to fail on a negative control (CONVENTIONS.md section 8).

- forget: CoGFD lowers the forget rate by >= FORGET_DROP_MIN points (erase set and held-out
  synonyms; mean over seeds). Control: `cogfd_noerase`, the same loss without exp(-L_e).
- retain: CoGFD's retain accuracy drops by <= RETAIN_DROP_MAX points (sub-concepts and other
  combinations). Control: `naive` (ESD-x on "red" then "circle").
- best: CoGFD's erase-retain ratio beats every rival, each paired over seeds with the 95%
  bootstrap interval of the difference above 0. Control: the same test for `cogfd_nograph`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .results import claim

FORGET_DROP_MIN = 50.0
RETAIN_DROP_MAX = 10.0
RIVALS = ("cogfd_nograph", "esd_x", "ca", "uce", "naive")
BOOTSTRAP = 2000


def interval(values: list[float], seed: int = 0) -> tuple[float, float, float]:
    """Mean and 95% percentile-bootstrap interval of the mean (fixed resampling seed)."""
    arr = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, len(arr), (BOOTSTRAP, len(arr)))].mean(1)
    return float(arr.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _values(metrics: dict, method: str, key: str) -> list[float]:
    return metrics[method][key]["values"]


def _fmt(name: str, stats: tuple[float, float, float]) -> str:
    return f"{name} {stats[0]:.1f} [{stats[1]:.1f}, {stats[2]:.1f}]"


def forget_check(metrics: dict, method: str) -> tuple[bool, str]:
    drop = interval(_values(metrics, method, "forget_drop"))
    held = interval(_values(metrics, method, "forget_drop_held_out"))
    text = f"{method}: {_fmt('erase-set drop', drop)} pts, {_fmt('held-out drop', held)} pts"
    return drop[0] >= FORGET_DROP_MIN and held[0] >= FORGET_DROP_MIN, text


def retain_check(metrics: dict, method: str) -> tuple[bool, str]:
    sub = interval(_values(metrics, method, "retain_drop_sub"))
    other = interval(_values(metrics, method, "retain_drop_other"))
    text = f"{method}: {_fmt('sub-concepts drop', sub)} pts, {_fmt('other combos drop', other)} pts"
    return sub[0] <= RETAIN_DROP_MAX and other[0] <= RETAIN_DROP_MAX, text


def best_check(metrics: dict, method: str) -> tuple[bool, str]:
    """Paired over seeds: the interval of ratio(method) - ratio(rival) must lie above 0."""
    ours = np.asarray(_values(metrics, method, "erase_retain_ratio"))
    parts, ok = [], True
    for rival in ("cogfd",) + RIVALS:
        if rival == method or rival not in metrics:
            continue
        diff = interval(list(ours - np.asarray(_values(metrics, rival, "erase_retain_ratio"))))
        ok &= diff[1] > 0
        parts.append(_fmt(f"minus {rival}", diff))
    mean = float(ours.mean())
    return ok, f"{method} ratio {mean:.2f}; paired differences " + ", ".join(parts)


CLAIMS = (
    (
        "cogfd-forget-drop",
        (
            f"CoGFD lowers the forget rate (judge says red AND circle) by >= {FORGET_DROP_MIN:g} points "
            "on the erase-set prompts and on held-out synonym prompts (mean of seeds; fails if either "
            "mean drop is below the bar)"
        ),
        (
            "CoGFD erases the combination (lowest CLIP score on forget prompts among erasers, "
            "HarmfulCmb)"
        ),
        forget_check,
        "cogfd_noerase",
    ),
    (
        "cogfd-retains-sub-concepts",
        (
            f"CoGFD's retain accuracy drops by <= {RETAIN_DROP_MAX:g} points on the sub-concepts (red, "
            "circle) and on other combinations (red square, blue circle, ...) (mean of seeds; fails "
            "if either mean drop exceeds the bar)"
        ),
        "sub-concepts stay generable (highest retain CLIP score among erasers)",
        retain_check,
        "naive",
    ),
    (
        "cogfd-best-erase-retain",
        (
            "CoGFD's erase-retain ratio (judge confidence in place of CLIP) beats every other eraser, "
            "paired over seeds (fails if any 95% bootstrap interval of the difference reaches 0)"
        ),
        "CoGFD has the best erase-retain score |dCLIP_forget / dCLIP_retain| on HarmfulCmb",
        best_check,
        "cogfd_nograph",
    ),
)


def claims_from(metrics: dict) -> list[dict[str, Any]]:
    """Every claim whose methods were run, with its negative control when that was run too."""
    out = []
    for cid, statement, paper, check, control in CLAIMS:
        holds, ours = check(metrics, "cogfd")
        c = claim(cid, statement, paper, ours, holds)
        if control in metrics:
            control_holds, control_text = check(metrics, control)
            c["negative_control"] = {
                "method": control,
                "ours": control_text,
                "holds": bool(control_holds),
                "fails_as_expected": not control_holds,
            }
        out.append(c)
    return out
