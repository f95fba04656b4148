"""The benchmark's claim wiring on synthetic per-instance errors whose verdict is known."""

from __future__ import annotations

import numpy as np

from trendy.bench import NOISE_LEVELS, Collector, noise_check


def collector(trendy: float, sindycp: dict[float, float], persistence: float) -> Collector:
    """Three seeds of five test trajectories each; nMSE = level x (1 + small jitter)."""
    rng = np.random.default_rng(0)
    col = Collector()
    for _ in range(3):
        for sigma in NOISE_LEVELS:
            key = f"test_nmse_noise{sigma}"
            for method, level in (
                ("TRENDy", trendy),
                ("SINDyCP", sindycp[sigma]),
                ("floor-persistence", persistence),
            ):
                inst = level * (1 + 0.05 * rng.standard_normal(5))
                col.add(method, key, float(inst.mean()), inst)
    return col


def test_noise_claim_holds_when_trendy_wins_and_sindycp_degrades():
    sindycp = {0.0: 0.3, 0.1: 1.0, 0.3: 2.0}
    passes = noise_check(collector(0.1, sindycp, persistence=0.5), "TRENDy")["passes"]
    assert passes == {"ratio": True, "degradation": True, "beats_persistence": True}


def test_noise_claim_fails_each_condition_that_the_numbers_break():
    flat = {s: 0.15 for s in NOISE_LEVELS}  # SINDyCP only 1.5x worse, and never degrades
    passes = noise_check(collector(0.1, flat, persistence=0.05), "TRENDy")["passes"]
    assert passes == {"ratio": False, "degradation": False, "beats_persistence": False}
