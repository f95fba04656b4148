"""Deep linear networks (issue 68, point 2): BPKR against the exact posterior at L = 1, 2, 3, and
Eq. 3 against Eq. 4 per seed as P and N0 grow together (P / N0 = 0.4, the paper's Figure 1).

    python -m bnn_renorm.studies --out runs/deep            # deep.json and deep_scaling.png

No sampling: both ground truths are quadratures (deep.deep_exact_posterior), so the study takes
a few minutes on one core. Not part of the bench presets (its numbers are in the README).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax.numpy as jnp
import matplotlib
import numpy as np

from . import data, deep, kernels
from .results import atomic_write_json, save_figure
from .train import kernel_blocks, width_at

matplotlib.use("Agg")
import matplotlib.pyplot as plt

TEMPERATURE, SCALE, NOISE, N_TEST = 0.02, 3.0, 0.1, 20


def problem(p: int, n0: int, seed: int, s2: float):
    x, y, x_test = data.linear_teacher(p, n0, N_TEST, seed, SCALE, NOISE)
    return y, kernel_blocks(kernels.linear_nngp, x, x_test, s2)


def one_setting(p: int, n0: int, alpha: float, seed: int, s2: float, depth: int) -> dict:
    """BPKR, the exact posterior and Eq. 3 (data power) at one (P, N0, alpha, seed, s2, L)."""
    y, blocks = problem(p, n0, seed, s2)
    width = width_at(p, alpha)
    ratios = deep.deep_variance_ratios(blocks, y, width, s2, TEMPERATURE, depth)
    noise = (SCALE * NOISE) ** 2
    signal = float(jnp.sum(y**2)) / p - noise
    big = deep.deep_integral_scale(p / n0, alpha, s2, TEMPERATURE, signal, noise, depth)
    eq3 = deep.deep_integral_variance_ratio(p / n0, big, s2, TEMPERATURE, depth)
    return {
        "p": p,
        "n0": n0,
        "alpha": alpha,
        "seed": seed,
        "s2": s2,
        "depth": depth,
        "exact": ratios["exact"],
        "bpkr": ratios["bpkr"],
        "eq3": eq3,
        "bpkr_vs_exact": abs(ratios["bpkr"] / ratios["exact"] - 1.0),
        "eq3_vs_eq4": abs(eq3 / ratios["bpkr"] - 1.0),
    }


def run(
    depths=(1, 2, 3),
    s2s=(0.5, 2.0),
    alphas=(0.5, 2.0),
    seeds=(0, 1, 2),
    sizes=(50, 100, 200, 400),
    n0_per_p: float = 2.5,
) -> list[dict]:
    rows = []
    for p in sizes:
        n0 = round(n0_per_p * p)
        for depth in depths:
            for s2 in s2s:
                for alpha in alphas:
                    for seed in seeds:
                        rows.append(one_setting(p, n0, alpha, seed, s2, depth))
    return rows


def summary(rows: list[dict]) -> dict:
    """Per (depth, P): the worst BPKR-vs-exact error and, per seed, the worst Eq. 3-vs-Eq. 4
    distance over (s2, alpha); their mean and largest value over seeds."""
    out = {}
    for depth in sorted({r["depth"] for r in rows}):
        for p in sorted({r["p"] for r in rows}):
            sel = [r for r in rows if r["depth"] == depth and r["p"] == p]
            seeds = sorted({r["seed"] for r in sel})
            per_seed = {
                q: [max(r[q] for r in sel if r["seed"] == s) for s in seeds]
                for q in ("bpkr_vs_exact", "eq3_vs_eq4")
            }
            out[f"L{depth}_P{p}"] = {
                q: {"mean": float(np.mean(v)), "max": float(np.max(v)), "per_seed": v}
                for q, v in per_seed.items()
            }
    return out


def figure(rows: list[dict]):
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    sizes = sorted({r["p"] for r in rows})
    stats = summary(rows)
    for depth, style in zip(
        sorted({r["depth"] for r in rows}), ("ko-", "bs-", "r^-"), strict=False
    ):
        for ax, q in zip(axes, ("eq3_vs_eq4", "bpkr_vs_exact"), strict=True):
            m = [stats[f"L{depth}_P{p}"][q]["mean"] for p in sizes]
            hi = [stats[f"L{depth}_P{p}"][q]["max"] for p in sizes]
            ax.plot(sizes, m, style, mfc="none", label=f"L = {depth} (mean over seeds)")
            ax.plot(sizes, hi, style[:2] + ":", alpha=0.5, label=f"L = {depth} (worst seed)")
    ref = np.array(sizes, float)
    axes[0].plot(ref, 0.03 * np.sqrt(200.0 / ref), "g--", label="1 / sqrt(P) (through 3% at 200)")
    axes[0].axhline(0.05, color="grey", lw=0.8, ls=":", label="5% gate")
    for ax, title in zip(
        axes,
        ("Eq. 3 vs Eq. 4: worst distance over s2, alpha", "BPKR vs exact posterior: worst error"),
        strict=True,
    ):
        ax.set(xscale="log", yscale="log", xlabel="P (N0 = 2.5 P)", title=title)
        ax.legend(fontsize=6)
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/deep", help="folder for deep.json and the figure")
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200, 400])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args(argv)
    if min(args.sizes) < 4:
        parser.error(f"--sizes: every P must be >= 4, got {min(args.sizes)}")
    rows = run(sizes=tuple(args.sizes), seeds=tuple(args.seeds))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "deep.json", {"rows": rows, "summary": summary(rows)})
    save_figure(figure(rows), out / "deep_scaling.png")
    print(json.dumps(summary(rows), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
