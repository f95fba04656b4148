"""Equal tuning: every eraser, CoGFD included, gets the same small grid on a validation seed.

The fine-tuning erasers are tuned over `lr_grid`, UCE (closed form, no learning rate) over
`uce_lambda_grid`. The criterion is forget drop minus retain drop (points) on the validation
seed `tune_seed`, which is never a test seed; ties go to the first grid value.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .config import Config
from .train import Stage, run_method

TUNED_BY_LR = ("cogfd", "cogfd_nograph", "esd_x", "ca", "naive")
CRITERION = "forget_drop - retain_drop (points; erase-set prompts, sub-concepts + other combos)"


def validation_score(m: dict[str, float]) -> float:
    return m["forget_drop"] - m["retain_drop"]


def tune(stage: Stage, cfg: Config) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """Per-method Config overrides (the chosen value) and the record of the whole grid."""
    _, orig = run_method("original", stage, cfg, cfg.tune_seed)
    overrides: dict[str, dict[str, float]] = {}
    record: dict[str, Any] = {}
    for name in cfg.methods:
        if name in TUNED_BY_LR:
            field, grid = "erase_lr", cfg.lr_grid
        elif name == "uce":
            field, grid = "uce_lambda", cfg.uce_lambda_grid
        else:
            continue
        scores, forget, retain = [], [], []
        for value in grid:
            run_cfg = dataclasses.replace(cfg, **{field: value})
            m = run_method(name, stage, run_cfg, cfg.tune_seed, orig)[1]
            scores.append(validation_score(m))
            forget.append(m["forget_drop"])
            retain.append(m["retain_drop"])
        best = scores.index(max(scores))
        chosen = grid[best]
        overrides[name] = {field: chosen}
        record[name] = {
            "field": field,
            "grid": list(grid),
            "scores": scores,
            "forget_drop": forget,
            "retain_drop": retain,
            "chosen": chosen,
            # a choice at the end of a sorted grid may have a better value beyond it
            "at_edge": len(grid) > 1 and best in (0, len(grid) - 1),
        }
    if "cogfd_noerase" in cfg.methods and "cogfd" in overrides:
        overrides["cogfd_noerase"] = dict(overrides["cogfd"])  # the ablation keeps CoGFD's lr
    return overrides, {"seed": cfg.tune_seed, "criterion": CRITERION, "methods": record}
