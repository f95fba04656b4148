"""Speed figures: our vectorised STCH-Set step against a faithful unvectorised reference loop.

The reference evaluates f_i(x^(k)) one (k, i) pair at a time and rebuilds the problem data at
every step, as the official `evaluate` does; the scalarization and optimiser are shared, so both
follow the same trajectory and differ only in cost per step.
"""

from __future__ import annotations

import dataclasses
import time

from .config import Config
from .data import make_problem
from .train import optimize

OFFICIAL_WORST = 0.334
"""The official script's final worst case of STCH-Set on the quadratic problem (3 seeds, 10k steps)."""


def seconds_per_step(cfg: Config, m: int, k: int, steps: int, naive: bool) -> float:
    """Wall seconds per STCH-Set step on the quadratic problem (seed 0)."""
    problem = make_problem("quadratic", 0, m, k, cfg.n_dim, cfg.device)
    evaluate = None
    if naive:

        def evaluate(params):
            return make_problem("quadratic", 0, m, k, cfg.n_dim, cfg.device).evaluate_naive(params)

    run_cfg = dataclasses.replace(cfg, steps=steps, quiet=True)
    start = time.perf_counter()
    optimize(problem, "stch-set", run_cfg, k, 0, evaluate=evaluate)
    return (time.perf_counter() - start) / steps


def entry(pid: str, what: str, ours: float | None, peer: str, peer_s: float | None) -> dict:
    ratio = peer_s / ours if ours and peer_s else None
    return {"id": pid, "what": what, "ours_s": ours, "peer": peer, "peer_s": peer_s, "ratio": ratio}


def performance(cfg: Config) -> tuple[list[dict], dict[str, list[tuple[int, float, float]]]]:
    """Performance entries for results JSON, and the (size, ours, reference) growth curves."""
    m0, k0 = 128, 5
    reference = "unvectorised (k, i) loop, data rebuilt every step (official evaluate)"
    ours_step = seconds_per_step(cfg, m0, k0, cfg.perf_steps, naive=False)
    ref_step = seconds_per_step(cfg, m0, k0, cfg.reference_steps, naive=True)
    out = [
        entry(
            "step-quadratic",
            "seconds per STCH-Set step, quadratic m=128 K=5",
            ours_step,
            reference,
            ref_step,
        )
    ]
    problem = make_problem("quadratic", 0, m0, k0, cfg.n_dim, cfg.device)
    start = time.perf_counter()
    _, history = optimize(
        problem,
        "stch-set",
        dataclasses.replace(cfg, steps=cfg.target_steps, quiet=True),
        k0,
        0,
        check_every=10,
        stop_below=OFFICIAL_WORST,
    )
    reached = bool(history) and history[-1][1] <= OFFICIAL_WORST
    ours_t = time.perf_counter() - start if reached else None
    ref_t = history[-1][0] * ref_step if reached else None
    out.append(
        entry(
            "time-to-official-worst",
            f"seconds to worst <= {OFFICIAL_WORST} on quadratic seed 0 (within {cfg.target_steps} steps; "
            "reference extrapolated as the same step count x its measured step time)",
            ours_t,
            reference,
            ref_t,
        )
    )
    growth: dict[str, list[tuple[int, float, float]]] = {"m": [], "K": []}
    for m in cfg.perf_m:
        growth["m"].append(
            (
                m,
                seconds_per_step(cfg, m, k0, max(1, cfg.perf_steps // 3), naive=False),
                seconds_per_step(cfg, m, k0, cfg.reference_steps, naive=True),
            )
        )
    for k in cfg.perf_k:
        growth["K"].append(
            (
                k,
                seconds_per_step(cfg, m0, k, max(1, cfg.perf_steps // 3), naive=False),
                seconds_per_step(cfg, m0, k, cfg.reference_steps, naive=True),
            )
        )
    for axis, rows in growth.items():
        for size, ours, ref in rows:
            fixed = f"K={k0}" if axis == "m" else f"m={m0}"
            out.append(
                entry(
                    f"step-{axis}{size}",
                    f"seconds per step, {axis}={size}, {fixed}",
                    ours,
                    reference,
                    ref,
                )
            )
    return out, growth
