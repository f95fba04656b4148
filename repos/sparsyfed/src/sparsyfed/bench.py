"""Benchmark: every method over the preset's seeds, paired claims with negative controls.

Split into `run_seed` (one seed, every run of the grid) and `finish` (claims, figure and the
results file), so that results.drive_bench can also run the seeds as separate jobs and merge
them (--partial-out / --merge, tools/launch.py)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from .baselines import LABELS
from .config import Config, validate
from .results import (
    claim,
    drive_bench,
    results_document,
    summarize,
    t_quantile,
    write_results,
)
from .runtime import progress, results_dir_of
from .train import train_and_evaluate

PAPER = "sparsyfed"
ACC_GAP = 0.03  # "within 3 points of dense FedAvg"
REGROWTH_FACTOR = 5.0  # CPU-scale stand-in for the paper's ~200x
REGROWTH_FLOOR = 1e-6  # regrowth below this counts as this (ratios stay finite)
NEAR_DENSE_MAX_S = 0.95  # the paper claims negligible loss up to 95% sparsity; 0.99 is reported
HEADLINE = ("dense", "topk", "flash", "sparsyfed_na", "sparsyfed", "sparsyfed_b1")
FLOWER_SKIP = (
    "Flower run_simulation (Ray) timing is off in the presets (flower_rounds=0): on the shared "
    "2-core machine Ray's start-up hung at round 1 (killed after 480 s); the slow test "
    "tests/test_flower.py checks the Simulation Engine gives the in-process global model"
)


def label(method: str, alpha: float, sparsity: float, arch: str = "") -> str:
    """Row name; `arch` is named only for the reported-only normalisation check."""
    tail = f", {arch}" if arch else ""
    if method == "dense":
        return f"{LABELS[method]} (alpha={alpha:g}{tail})"
    return f"{LABELS[method]} (alpha={alpha:g}, s={sparsity:g}{tail})"


def grid(cfg: Config) -> list[tuple[str, float, float, str]]:
    """(method, alpha, sparsity, arch) runs: every method at the headline point, sweeps around
    it, and the headline point again with cfg.bench_norm_arch ("" = the preset's model)."""
    a0, s0 = cfg.bench_alphas[0], cfg.bench_sparsities[0]
    runs = [(m, a0, s0, "") for m in HEADLINE]
    runs += [(m, a0, s, "") for s in cfg.bench_sparsities[1:] for m in ("topk", "sparsyfed")]
    runs += [(m, a, s0, "") for a in cfg.bench_alphas[1:] for m in ("dense", "topk", "sparsyfed")]
    if cfg.bench_norm_arch:
        runs += [(m, a0, s0, cfg.bench_norm_arch) for m in ("dense", "topk", "flash", "sparsyfed")]
    return runs


def mean(metrics: dict, key: str, metric: str) -> float:
    return metrics[key][metric]["mean"]


def values(metrics: dict, key: str, metric: str) -> np.ndarray:
    """Per-seed values of one metric (in cfg.seeds order, so rows pair up by seed)."""
    return np.asarray(metrics[key][metric]["values"], dtype=float)


def paired(diff: np.ndarray) -> dict:
    """Mean of per-seed paired differences with a two-sided 95% t interval."""
    n = len(diff)
    half = t_quantile(n - 1) * float(diff.std(ddof=1)) / np.sqrt(n) if n > 1 else np.inf
    mean, half = float(diff.mean()), float(half)  # python floats: their comparisons are JSON bools
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n}


def fmt(iv: dict, digits: int = 3) -> str:
    return f"{iv['mean']:+.{digits}f} [{iv['lo']:+.{digits}f}, {iv['hi']:+.{digits}f}]"


def near_dense(metrics: dict, cfg: Config, sparsity: float) -> dict:
    """Paired gap dense - SparsyFed; holds iff the 95% upper bound is <= ACC_GAP. Control: the
    same check on the untrained initial model (must fail)."""
    a0 = cfg.bench_alphas[0]
    dense = values(metrics, label("dense", a0, 0), "accuracy")
    sf_key = label("sparsyfed", a0, sparsity)
    gap = paired(dense - values(metrics, sf_key, "accuracy"))
    ctrl = paired(dense - values(metrics, sf_key, "accuracy_untrained"))
    return claim(
        f"sparsyfed-near-dense-s{sparsity:g}",
        f"at s={sparsity:g}, alpha={a0:g}: SparsyFed accuracy within {ACC_GAP * 100:g} points "
        "of dense FedAvg (same rounds, paired seeds; 95% upper bound of the gap)",
        "95% sparse models with negligible accuracy loss (CIFAR-10, ResNet-18)",
        f"gap dense - SparsyFed {fmt(gap)}; fails if the upper bound > {ACC_GAP:g}",
        gap["hi"] <= ACC_GAP,
        interval=gap,
        control={
            "what": "the same check on the untrained initial model (floor)",
            "ours": f"gap {fmt(ctrl)}",
            "holds": ctrl["hi"] <= ACC_GAP,
        },
    )


def beats_topk(metrics: dict, cfg: Config) -> dict:
    """Paired difference SparsyFed - Top-K > 0 (95% lower bound). Control: beta = 1."""
    a0, s0 = cfg.bench_alphas[0], cfg.bench_sparsities[0]
    topk = values(metrics, label("topk", a0, s0), "accuracy")
    diff = paired(values(metrics, label("sparsyfed", a0, s0), "accuracy") - topk)
    ctrl = paired(values(metrics, label("sparsyfed_b1", a0, s0), "accuracy") - topk)
    return claim(
        "sparsyfed-beats-topk",
        f"at s={s0:g}, alpha={a0:g}: SparsyFed accuracy above Top-K (paired, 95% lower bound > 0)",
        "best accuracy of all sparse baselines at LDA alpha = 0.1",
        f"SparsyFed - Top-K {fmt(diff)}; fails if the lower bound <= 0",
        diff["lo"] > 0,
        interval=diff,
        control={
            "what": "the same check on SparsyFed with beta = 1 (no Powerpropagation)",
            "ours": f"difference {fmt(ctrl)}",
            "holds": ctrl["lo"] > 0,
        },
    )


def log_ratio(metrics: dict, num: str, den: str) -> dict:
    """Paired interval of log(regrowth_num / regrowth_den) over seeds."""
    a = np.maximum(values(metrics, num, "mean_regrowth"), REGROWTH_FLOOR)
    b = np.maximum(values(metrics, den, "mean_regrowth"), REGROWTH_FLOOR)
    return paired(np.log(a / b))


def regrowth_lower(metrics: dict, cfg: Config) -> dict:
    """Top-K / SparsyFed per-round regrowth >= REGROWTH_FACTOR (geometric mean, 95% lower bound
    of the paired log ratio). Control: Top-K / (SparsyFed with beta = 1), which must fail."""
    a0, s0 = cfg.bench_alphas[0], cfg.bench_sparsities[0]
    topk, sf = label("topk", a0, s0), label("sparsyfed", a0, s0)
    ratio = log_ratio(metrics, topk, sf)
    ctrl = log_ratio(metrics, topk, label("sparsyfed_b1", a0, s0))
    x = lambda iv: f"{np.exp(iv['mean']):.2f}x [{np.exp(iv['lo']):.2f}, {np.exp(iv['hi']):.2f}]"
    rg = lambda k: metrics[k]["mean_regrowth"]["mean"]
    return claim(
        "regrowth-5x-lower",
        f"at s={s0:g}, alpha={a0:g}: SparsyFed per-round regrowth (aggregate density minus "
        f"upload density) at least {REGROWTH_FACTOR:g}x below Top-K's (95% lower bound)",
        "about 200x less per-round weight regrowth than prior sparse FL methods (Sec. 5.3: "
        "global model stays at the target sparsity, Top-K/ZeroFL drift to 83%/47%)",
        f"{rg(sf):.2e} vs Top-K {rg(topk):.2e}: ratio {x(ratio)}; fails if the lower bound "
        f"< {REGROWTH_FACTOR:g}x",
        np.exp(ratio["lo"]) >= REGROWTH_FACTOR,
        interval={k: float(np.exp(v)) if k != "n" else v for k, v in ratio.items()},
        control={
            "what": "the same ratio for SparsyFed with beta = 1 (no Powerpropagation)",
            "ours": f"ratio {x(ctrl)}",
            "holds": bool(np.exp(ctrl["lo"]) >= REGROWTH_FACTOR),
        },
    )


def compute_claims(cfg: Config, metrics: dict) -> list[dict]:
    claims = [
        near_dense(metrics, cfg, cfg.bench_sparsities[0]),
        beats_topk(metrics, cfg),
        regrowth_lower(metrics, cfg),
    ]
    claims += [
        near_dense(metrics, cfg, s) for s in cfg.bench_sparsities[1:] if s <= NEAR_DENSE_MAX_S
    ]
    return claims


def flower_timing(cfg: Config) -> list[dict]:
    """Wall time per round: in-process loop vs Flower's Simulation Engine, same clients."""
    from .federated import run_federated
    from .flower_app import run_flower_simulation

    small = dataclasses.replace(cfg, rounds=cfg.flower_rounds, method="sparsyfed")
    tic = time.perf_counter()
    state_loop, _, _ = run_federated(small)
    loop_s = (time.perf_counter() - tic) / small.rounds
    state_flwr, flwr_total = run_flower_simulation(small)
    same = max(float((state_loop[k] - state_flwr[k]).abs().max()) for k in state_loop)
    return [
        {
            "id": "round-time-inprocess-vs-flower",
            "what": f"seconds per round, {small.clients_per_round} clients, "
            f"{small.rounds} rounds (Flower time includes Ray actor start-up); "
            f"max |global model difference| = {same:.1e}",
            "unit": "s",
            "higher_is_better": False,
            "ours_value": round(loop_s, 4),
            "peer": "flwr 1.42 run_simulation (Ray)",
            "peer_value": round(flwr_total / small.rounds, 4),
        }
    ]


def comm_performance(cfg: Config, metrics: dict) -> list[dict]:
    a0 = cfg.bench_alphas[0]
    dense_nnz = mean(metrics, label("dense", a0, 0), "uploaded_nonzeros")
    out = []
    for s in cfg.bench_sparsities:
        nnz = mean(metrics, label("sparsyfed", a0, s), "uploaded_nonzeros")
        out.append(
            {
                "id": f"upload-nonzeros-s{s:g}",
                "what": f"uploaded non-zeros over the run, SparsyFed s={s:g} vs dense FedAvg",
                "unit": "non-zeros",
                "higher_is_better": False,
                "ours_value": nnz,
                "peer": "dense FedAvg",
                "peer_value": dense_nnz,
                "ratio": round(dense_nnz / nnz, 2),
                "paper": "19.29x less communication than dense (reviewer quote)",
            }
        )
    return out


def plot(cfg: Config, histories: dict[str, dict]) -> Any:
    """Accuracy, regrowth and client-mask IoU per round (a matplotlib figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for key, h in histories.items():
        axes[0].plot(h["eval_round"], h["acc_dense"], marker="o", label=key)
        axes[1].plot(h["round"], h["regrowth"], label=key)
        axes[2].plot(h["round"], h["iou"], label=key)
    for ax, title in zip(
        axes,
        (
            "test accuracy (dense aggregate)",
            "regrowth (aggregate - upload density)",
            "client mask IoU",
        ),
    ):
        ax.set_title(title)
        ax.set_xlabel("round")
    axes[1].set_yscale("symlog", linthresh=1e-5)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{cfg.name} preset, seed {cfg.seeds[0]}")
    return fig


def finished_run(workdir: Path, run_cfg: Config) -> dict | None:
    """metrics.json of a finished run in workdir whose config.json is run_cfg (reuse_runs aside)."""
    try:
        stored = json.loads((workdir / "config.json").read_text())
        metrics = json.loads((workdir / "metrics.json").read_text())
    except (OSError, ValueError):
        return None
    wanted = json.loads(json.dumps(dataclasses.asdict(run_cfg)))
    same = {k: v for k, v in stored.items() if k != "reuse_runs"} == {
        k: v for k, v in wanted.items() if k != "reuse_runs"
    }
    return metrics if same else None


def run_seed(cfg: Config, seed: int) -> dict:
    """One seed of the bench: every run of grid(cfg) (run folders under cfg.out/<run>/seed<seed>).
    Returns {"metrics": {row: {metric: value}}, "histories": {row: per-round history}} (JSON-able;
    histories of the headline alpha's rows only, which the figure draws)."""
    validate(cfg)
    per_run: dict[str, dict[str, float]] = {}
    histories: dict[str, dict] = {}
    for method, alpha, sparsity, arch in grid(cfg):
        key = label(method, alpha, sparsity, arch)
        run_cfg = dataclasses.replace(
            cfg,
            seed=seed,
            method=method,
            alpha=alpha,
            sparsity=sparsity,
            arch=arch or cfg.arch,
            quiet=True,
        )
        run_dir = f"{method}_a{alpha:g}_s{sparsity:g}" + (f"_{arch}" if arch else "")
        workdir = Path(cfg.out) / run_dir / f"seed{seed}"
        done = finished_run(workdir, run_cfg) if cfg.reuse_runs else None
        per_run[key] = dict(done or train_and_evaluate(run_cfg, workdir))
        if alpha == cfg.bench_alphas[0] and not arch:
            histories[key] = json.loads((workdir / "history.json").read_text())["history"]
    return {"metrics": per_run, "histories": histories}


def finish(cfg: Config, per_seed: dict[int, dict], wall_seconds: float) -> dict:
    """Metrics over the seeds of `per_seed` (in its order, so rows pair up by seed), the claims,
    the performance rows and the figure (histories of the first seed); writes
    <results-dir>/<name>.json and the figure together."""
    start = time.perf_counter()
    seeds = list(per_seed)
    cfg = dataclasses.replace(cfg, seeds=tuple(seeds))
    validate(cfg)
    rows = [label(m, a, s, arch) for m, a, s, arch in grid(cfg)]
    per_run: dict[str, dict[str, list[float]]] = {}
    for seed in seeds:
        if list(per_seed[seed]["metrics"]) != rows:
            raise ValueError(
                f"seed {seed}: its runs {list(per_seed[seed]['metrics'])} are not this preset's "
                f"grid {rows} (were the partial files made with other flags?)"
            )
        for key, row in per_seed[seed]["metrics"].items():
            for name, value in row.items():
                per_run.setdefault(key, {}).setdefault(name, []).append(value)
    metrics = {k: {m: summarize(v) for m, v in d.items()} for k, d in per_run.items()}
    claims = compute_claims(cfg, metrics)
    performance = comm_performance(cfg, metrics)
    skipped = []
    if cfg.flower_rounds > 0:
        performance += flower_timing(dataclasses.replace(cfg, seed=seeds[0]))
    else:
        skipped.append({"id": "round-time-inprocess-vs-flower", "why": FLOWER_SKIP})
    figure = plot(cfg, per_seed[seeds[0]]["histories"])
    doc = results_document(
        PAPER,
        cfg.name,
        seeds,
        metrics,
        claims,
        wall_seconds + time.perf_counter() - start,
        cfg.device,
        performance,
    )
    doc["skipped"] = skipped
    doc["grid"] = {
        "seeds": seeds,
        "rounds": cfg.rounds,
        "runs": [list(r) for r in grid(cfg)],
    }
    write_results(results_dir_of(cfg), cfg.name, doc, {f"{cfg.name}-curves.png": figure})
    return doc


def run_bench(cfg: Config) -> dict:
    """Every seed (run_seed), then the claims and the results file (finish); with --partial-out
    only this job's seeds into a partial file, with --merge finish over the partial files'
    seeds (results.drive_bench, tools/launch.py)."""
    validate(cfg)
    return drive_bench(cfg, PAPER, run_seed, finish, progress)
