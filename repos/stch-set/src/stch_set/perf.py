"""Speed: our STCH-Set training step against a port of the official one (official.py).

Both run the official hyperparameters (schedule-free SGD / AdamW, lr 1e-2, 100 warm-up steps,
mu = 0.1 or the nonlinear annealing). The official step re-seeds the RNG and rebuilds the problem
data before its one matrix product and uses torch.logsumexp; ours evaluates cached data and our
clamped logsumexp. Both trajectories start from the official initialisation, so the time to a
target worst case compares the same optimisation path.
"""

from __future__ import annotations

import dataclasses
import time

from .config import OFFICIAL_INIT_PROBLEMS, Config
from .data import sizes
from .official import train_official
from .train import optimize, prepare

OFFICIAL_WORST = 0.334
"""The official script's final worst case of STCH-Set on the quadratic problem (3 seeds, 10k steps)."""
PEER = "official training step (port: data rebuilt by torch.manual_seed every step)"


def official_hyperparameters(cfg: Config) -> Config:
    return dataclasses.replace(
        cfg, lr=1e-2, warmup_steps=100, mu=0.1, mu_anneal=3e-4, optimizer="schedulefree", quiet=True
    )


def ours_seconds_per_step(
    cfg: Config, name: str, seeds: tuple[int, ...], m: int, k: int, steps: int
) -> float:
    """Wall seconds per step of one seed (the batch's time divided by its seeds)."""
    batch, start, prefs, _, _ = prepare(cfg, name, seeds, m, k, "official")
    clock = time.perf_counter()
    optimize(batch, "stch-set", dataclasses.replace(cfg, steps=steps), start, prefs)
    return (time.perf_counter() - clock) / (steps * len(seeds))


def official_seconds_per_step(name: str, m: int, k: int, n_dim: int, steps: int) -> float:
    _, done, seconds = train_official(name, "stch-set", 0, steps, m, k, n_dim)
    return seconds / done


def row(pid: str, what: str, ours: float | None, peer: float | None) -> dict | None:
    """A performance row in seconds (lower is better); None when either figure is missing."""
    if ours is None or peer is None:
        return None
    return {
        "id": pid,
        "what": what,
        "unit": "s",
        "higher_is_better": False,
        "ours_value": ours,
        "peer": PEER,
        "peer_value": peer,
        "ratio": peer / ours,
    }


def time_to_target(cfg: Config, m: int, k: int) -> tuple[float | None, float | None]:
    """Seconds until the averaged weights reach worst <= OFFICIAL_WORST on quadratic seed 0
    (checked every 10 steps by both, at most cfg.target_steps); None if not reached."""
    batch, start, prefs, _, _ = prepare(cfg, "quadratic", (0,), m, k, "official")
    clock = time.perf_counter()
    _, history = optimize(
        batch,
        "stch-set",
        dataclasses.replace(cfg, steps=cfg.target_steps),
        start,
        prefs,
        check_every=10,
        stop_below=OFFICIAL_WORST,
    )
    ours = time.perf_counter() - clock
    reached = bool(history) and history[-1][1][0] <= OFFICIAL_WORST
    worst, _, peer = train_official(
        "quadratic", "stch-set", 0, cfg.target_steps, m, k, cfg.n_dim, 10, OFFICIAL_WORST
    )
    return (ours if reached else None), (peer if worst <= OFFICIAL_WORST else None)


def performance(cfg: Config, problems: tuple[str, ...]) -> tuple[list[dict], dict]:
    """Performance rows for the results JSON, and the (size, ours, official) growth curves."""
    cfg = official_hyperparameters(cfg)
    rows: list[dict | None] = []
    for name in (p for p in problems if p in OFFICIAL_INIT_PROBLEMS):
        m, k = sizes(name, cfg.m, cfg.k)
        peer = official_seconds_per_step(name, m, k, cfg.n_dim, cfg.official_steps)
        one = ours_seconds_per_step(cfg, name, (0,), m, k, cfg.perf_steps)
        batched = ours_seconds_per_step(cfg, name, tuple(cfg.seeds), m, k, cfg.perf_steps)
        rows.append(
            row(f"step-{name}", f"seconds per STCH-Set step, {name} m={m} K={k}", one, peer)
        )
        rows.append(
            row(
                f"seed-step-{name}",
                f"seconds per STCH-Set step and seed, {name}, {len(cfg.seeds)} seeds batched "
                "(official: one seed at a time)",
                batched,
                peer,
            )
        )
    m0, k0 = 128, 5
    ours_t, peer_t = time_to_target(cfg, m0, k0)
    rows.append(
        row(
            "time-to-official-worst",
            f"seconds to worst <= {OFFICIAL_WORST} on quadratic seed 0, official init "
            f"(at most {cfg.target_steps} steps)",
            ours_t,
            peer_t,
        )
    )
    growth: dict[str, list[tuple[int, float, float]]] = {"m": [], "K": []}
    short, official_short = max(1, cfg.perf_steps // 3), max(1, cfg.official_steps // 3)
    for axis, points in (
        ("m", [(m, k0) for m in cfg.perf_m]),
        ("K", [(m0, k) for k in cfg.perf_k]),
    ):
        for m, k in points:
            ours = ours_seconds_per_step(cfg, "quadratic", (0,), m, k, short)
            peer = official_seconds_per_step("quadratic", m, k, cfg.n_dim, official_short)
            size = m if axis == "m" else k
            growth[axis].append((size, ours, peer))
            fixed = f"K={k}" if axis == "m" else f"m={m}"
            rows.append(
                row(
                    f"step-{axis}{size}",
                    f"seconds per step, quadratic {axis}={size}, {fixed}",
                    ours,
                    peer,
                )
            )
    return [r for r in rows if r is not None], growth
