"""Benchmark: every method over the preset's seeds, claims from the pooled job records with
paired intervals and negative controls, the Gram timing, figures."""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from . import sde, sigkernel, stats, tuning
from .config import Config
from .figures import make_figures
from .results import claim, part, results_document, summarize, verdict, write_results
from .runtime import results_dir_of
from .train import (
    ABLATIONS,
    CI_KINDS,
    CONTROLS,
    GRAPH_METHODS,
    GRAPH_REFERENCES,
    METHODS,
    load_records,
    pvalues,
    train_and_evaluate,
)

PAPER = "sde-causal"
TYPE1_MAX = tuning.TYPE1_MAX  # type-I error at alpha 0.05 stays at most 0.10
POWER_TIE = 0.05  # "at least equal" power: the paired interval may reach 0.05 below, no lower
BASELINES = tuple(m for m in METHODS if m != "SigKer-CI")
LINEAR_BASELINES = ("Granger", "PCMCI")
# The paper's SHD statements per family, from secondary sources (README: Deviations); Table 1 is
# bivariate, SHD x 100, mean +- std.
PAPER_SHD = {
    "diffusion": "Table 1, diffusion dependence: SigKer 72+-6 (n=200), 63+-5 (n=400), behind "
    "SCOTCH's best 25+-13 / 9+-8; CCM 100+-10",
    "path": "Table 1, path dependence, n=200: SigKer 5+-2 vs next best SCOTCH 23+-12",
    "other": "Tables 1-2: lower SHD than CCM, Granger, PCMCI on drift SDEs (d <= 10)",
}


def time_grams(n: int, cfg: Config, seed: int) -> list[dict]:
    """The Gram as the CI test computes it (pysiglib, chunked) against the numpy reference
    solver and against pysiglib's default batching; same paths, scheme and refinement."""
    import pysiglib

    rng = np.random.default_rng(seed)
    x = sigkernel.add_time(
        np.cumsum(rng.normal(0, 0.3, (n, cfg.n_obs, 1)), axis=1), np.linspace(0, 1, cfg.n_obs)
    )
    sigma = sigkernel.median_bandwidth(x)

    def timed(fn) -> tuple[np.ndarray, float]:
        start = time.perf_counter()
        out = np.asarray(fn())
        return out, time.perf_counter() - start

    ours, ours_s = timed(lambda: sigkernel.pysiglib_gram(x, sigma=sigma, refinement=cfg.refinement))
    ref, ref_s = timed(lambda: sigkernel.gram(x, sigma=sigma, refinement=cfg.refinement))
    rbf = pysiglib.RBFKernel(2 * sigma**2)
    dflt, dflt_s = timed(
        lambda: pysiglib.sig_kernel_gram(x, x, dyadic_order=cfg.refinement, static_kernel=rbf)
    )
    what = (
        f"{n}x{n} signature-kernel Gram, {cfg.n_obs} points, time-augmented, RBF, refinement "
        f"{cfg.refinement}; ours = pysiglib sig_kernel_gram in chunks of 32x32 pairs (the CI "
        "test's call)"
    )
    row = {"unit": "s", "higher_is_better": False, "ours_value": round(ours_s, 4)}
    return [
        {
            "id": f"gram-{n}x{n}-vs-numpy",
            "what": f"{what}; max |ours - numpy| = {np.abs(ours - ref).max():.1e}",
            **row,
            "peer": "numpy reference PDE solver (sigkernel.gram, this repo)",
            "peer_value": round(ref_s, 4),
        },
        {
            "id": f"gram-{n}x{n}-vs-pysiglib-default",
            "what": f"{what}; max |ours - default| = {np.abs(ours - dflt).max():.1e}",
            **row,
            "peer": "pysiglib 4.0.0 sig_kernel_gram, default batching (one call)",
            "peer_value": round(dflt_s, 4),
        },
    ]


def pooled(records: list[dict], cfg: Config) -> dict:
    """Rates over every seed's data sets: type-I with Wilson intervals, raw and size-adjusted
    power per n, SHD per family."""
    out: dict = {"ci": {}, "shd": {}}
    for m in METHODS + CONTROLS + ABLATIONS:
        out["ci"][m] = {}
        for n in cfg.n_grid:
            null = pvalues(records, "type1", n, m)
            row = {"type1": float((null < cfg.alpha).mean()), "nulls": len(null)}
            row["type1_ci"] = stats.wilson(int((null < cfg.alpha).sum()), len(null))
            for kind in ("power_drift", "power_diffusion"):
                alt = pvalues(records, kind, n, m)
                row[kind] = float((alt < cfg.alpha).mean())
                row[f"{kind}_sa"] = stats.size_adjusted_power(null, alt, cfg.alpha)
                row[f"{kind}_count"] = len(alt)
            c, gamma = stats.critical_value(null, cfg.alpha)
            row["critical_value"] = c if np.isfinite(c) else None  # None: reject everything
            row["critical_gamma"] = gamma
            out["ci"][m][str(n)] = row
    out["ridge_sensitivity"] = ridge_sensitivity(records, cfg)
    # issue 65: the paper's (SDCIT-style) statistic against ours on the same Grams and data sets
    out["sdcit_vs_hsic"] = {
        str(n): {
            kind: stats.paired_power_difference(
                pvalues(records, "type1", n, "SigKer-SDCIT"),
                pvalues(records, kind, n, "SigKer-SDCIT"),
                pvalues(records, "type1", n, "SigKer-CI"),
                pvalues(records, kind, n, "SigKer-CI"),
                cfg.alpha,
                20 + k,
            )
            for k, kind in enumerate(("power_drift", "power_diffusion"))
        }
        for n in cfg.n_grid
    }
    graphs = [r for r in records if r["kind"] == "graph"]
    for family in sde.FAMILIES:
        fam = [r for r in graphs if r["family"] == family]
        out["shd"][family] = {
            m: float(np.mean([r["shd"][m] for r in fam])) for m in GRAPH_METHODS + GRAPH_REFERENCES
        }
        out["shd"][family]["graphs"] = len(fam)
    return out


def ridge_sensitivity(records: list[dict], cfg: Config) -> dict:
    """SigKer-CI's type-I and raw / size-adjusted power at every grid ridge, on the benchmark's
    data sets with n <= RIDGE_SENSITIVITY_MAX_N (a diagnostic: no claim and no choice uses it)."""
    out: dict = {}
    for n in sorted({r["n"] for r in records if "p_ridge" in r}):
        rows = [r for r in records if r.get("n") == n and "p_ridge" in r]
        out[str(n)] = {}
        for v in cfg.ridge_grid:
            p = {
                k: np.array([r["p_ridge"][str(v)] for r in rows if r["kind"] == k])
                for k in CI_KINDS
            }
            row = {"type1": float((p["type1"] < cfg.alpha).mean())}
            for kind in CI_KINDS[1:]:
                row[kind] = float((p[kind] < cfg.alpha).mean())
                row[f"{kind}_sa"] = stats.size_adjusted_power(p["type1"], p[kind], cfg.alpha)
            out[str(n)][str(v)] = row
    return out


def _interval(d: dict) -> str:
    return f"{d['diff']:+.2f} [{d['lo']:+.2f}, {d['hi']:+.2f}]"


def _control(method: str, test: list[dict]) -> dict:
    """A negative control's own structured test; it must not get the verdict holds."""
    v = verdict(test)
    return {"method": method, "test": test, "verdict": v, "holds": v == "holds"}


def power_claim(records: list[dict], cfg: Config, kind: str) -> dict:
    """Size-adjusted power of SigKer-CI against the best baseline at the largest n, paired."""
    n = max(cfg.n_grid)
    null = {m: pvalues(records, "type1", n, m) for m in METHODS + CONTROLS}
    alt = {m: pvalues(records, kind, n, m) for m in METHODS + CONTROLS}
    sa = {m: stats.size_adjusted_power(null[m], alt[m], cfg.alpha) for m in null}
    best = max(BASELINES, key=sa.get)
    seed = 1 if kind == "power_drift" else 2
    d = stats.paired_power_difference(
        null["SigKer-CI"], alt["SigKer-CI"], null[best], alt[best], cfg.alpha, seed
    )
    ctrl = stats.paired_power_difference(
        null["SigKer-CI shuffled"],
        alt["SigKer-CI shuffled"],
        null[best],
        alt[best],
        cfg.alpha,
        seed,
    )
    raw = {m: float((alt[m] < cfg.alpha).mean()) for m in METHODS}
    calibrated = [m for m in BASELINES if (null[m] < cfg.alpha).mean() <= TYPE1_MAX]
    n_alt = len(alt["SigKer-CI"])
    boot = "paired joint bootstrap over data sets (95% percentile)"
    if kind == "power_diffusion":
        # holds when the interval of the paired difference lies above 0
        threshold, bar = 0.0, "lower end > 0"
        statement = "exceeds the best baseline's"
        paper = (
            "higher power than path-space CI tests (Sec. 4, Fig. 3, unconditional test); the "
            "paper itself notes the constraint may be weak for diffusion-only dependence"
        )
    else:
        # holds when the interval stays above -POWER_TIE (at most POWER_TIE below the best)
        threshold, bar = -POWER_TIE, f"lower end > -{POWER_TIE}"
        statement = f"is at least the best baseline's (within {POWER_TIE})"
        paper = "higher power than path-space CI tests (Sec. 4, Fig. 3, unconditional test)"
    test = [
        part(
            f"size-adjusted power SigKer-CI - {best} at n={n}",
            d["diff"],
            (d["lo"], d["hi"]),
            threshold,
            ">",
            n_alt,
            "power",
            boot,
        )
    ]
    ctrl_test = [
        part(
            f"size-adjusted power SigKer-CI shuffled - {best} at n={n}",
            ctrl["diff"],
            (ctrl["lo"], ctrl["hi"]),
            threshold,
            ">",
            n_alt,
            "power",
            boot,
        )
    ]
    ctrl_verdict = verdict(ctrl_test)
    edges = kind.replace("power_", "").replace("diffusion", "diffusion-only")
    best_cal = max(calibrated, key=raw.get) if calibrated else None
    cal_text = (
        f"raw power {raw['SigKer-CI']:.2f} vs best calibrated baseline {best_cal} "
        f"{raw[best_cal]:.2f}"
        if best_cal
        else "no baseline has type-I <= 0.10"
    )
    ours = (
        f"n={n}, {n_alt} {edges} edges, {len(null['SigKer-CI'])} nulls: "
        f"size-adjusted power {sa['SigKer-CI']:.2f} vs best baseline {best} {sa[best]:.2f}, "
        f"paired difference {_interval(d)} (95% joint bootstrap; needs {bar}); {cal_text}; "
        f"negative control SigKer-CI shuffled: {sa['SigKer-CI shuffled']:.2f}, "
        f"difference {_interval(ctrl)}, verdict {ctrl_verdict}"
    )
    return claim(
        f"{kind.replace('_', '-')}-size-adjusted",
        f"SigKer-CI's size-adjusted power on {edges} edges at the largest n {statement} "
        "(negative control, SigKer-CI with the past of i shuffled, must not hold)",
        paper,
        ours,
        test=test,
        negative_control=_control("SigKer-CI shuffled", ctrl_test),
    )


def type1_claim(records: list[dict], cfg: Config) -> dict:
    """SigKer-CI's type-I error at every n of the grid; the no-conditioning control fails it."""
    rates = {}
    for m in ("SigKer-CI", "SigKer-CI no-cond"):
        rates[m] = {n: pvalues(records, "type1", n, m) < cfg.alpha for n in cfg.n_grid}
    # holds when the Wilson interval of the type-I error lies below TYPE1_MAX at every n
    tests = {
        m: [
            part(
                f"{m} type-I error at n={n}",
                r.mean(),
                stats.wilson(int(r.sum()), len(r)),
                TYPE1_MAX,
                "<",
                len(r),
                "rate",
                "Wilson 95% over null data sets",
            )
            for n, r in rates[m].items()
        ]
        for m in rates
    }
    ctrl_verdict = verdict(tests["SigKer-CI no-cond"])

    def text(m: str) -> str:
        return "; ".join(
            f"n={n}: {r.mean():.3f} [{stats.wilson(int(r.sum()), len(r))[0]:.3f}, "
            f"{stats.wilson(int(r.sum()), len(r))[1]:.3f}] of {len(r)}"
            for n, r in rates[m].items()
        )

    return claim(
        "type1-calibrated",
        f"SigKer-CI type-I error at alpha {cfg.alpha} is at most {TYPE1_MAX} on null triples "
        "at every sample size (negative control, no conditioning set, must not hold)",
        "a consistent test at level alpha (App. A.14); no type-I table in the paper per the "
        "secondary sources (README)",
        f"{text('SigKer-CI')} (Wilson 95%); negative control without the conditioning set: "
        f"{text('SigKer-CI no-cond')}, verdict {ctrl_verdict}",
        test=tests["SigKer-CI"],
        negative_control=_control("SigKer-CI no-cond", tests["SigKer-CI no-cond"]),
    )


def shd_claim(records: list[dict], family: str) -> dict:
    """SigKer-CI's SHD against the better linear baseline on one family's graphs, paired."""
    graphs = [r for r in records if r["kind"] == "graph" and r["family"] == family]
    shd = {m: np.array([r["shd"][m] for r in graphs]) for m in GRAPH_METHODS + GRAPH_REFERENCES}
    best = min(LINEAR_BASELINES, key=lambda m: shd[m].mean())
    seed = 10 + sde.FAMILIES.index(family)
    d = stats.paired_mean_difference(shd["SigKer-CI"], shd[best], seed)
    floor = stats.paired_mean_difference(shd["empty"], shd[best], seed)
    # holds when the paired interval of SHD(SigKer-CI) - SHD(best linear) lies below 0

    def shd_part(m: str, diff: dict) -> dict:
        return part(
            f"SHD {m} - {best}, {family}",
            diff["diff"],
            (diff["lo"], diff["hi"]),
            0.0,
            "<",
            len(graphs),
            "edges",
            "paired bootstrap over graphs (95% percentile)",
        )

    test, floor_test = [shd_part("SigKer-CI", d)], [shd_part("empty graph", floor)]
    expect = (
        "linear models misspecified here"
        if family in sde.LINEAR_MISSPECIFIED
        else "linear models (nearly) well specified here"
    )
    return claim(
        f"shd-{family}",
        f"SigKer-CI has lower SHD than the better of Granger and PCMCI on {family} graphs "
        f"({expect}; negative control, the empty graph, must not hold)",
        PAPER_SHD.get(family, PAPER_SHD["other"]),
        f"{len(graphs)} graphs: SHD {shd['SigKer-CI'].mean():.2f} vs {best} "
        f"{shd[best].mean():.2f}, paired difference {_interval(d)} (95% bootstrap; needs upper "
        f"end < 0); oracle {shd['oracle'].mean():.2f}; floor (empty graph) "
        f"{shd['empty'].mean():.2f}, difference {_interval(floor)}, "
        f"verdict {verdict(floor_test)}",
        test=test,
        negative_control=_control("empty graph", floor_test),
    )


def make_claims(records: list[dict], cfg: Config) -> list[dict]:
    """Every claim, decided by thresholds on the pooled records."""
    return [
        type1_claim(records, cfg),
        power_claim(records, cfg, "power_diffusion"),
        power_claim(records, cfg, "power_drift"),
        *(shd_claim(records, f) for f in sde.FAMILIES),
    ]


def _pool_map(workers: int):
    if workers == 1:
        return None, map
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    return pool, lambda fn, items: pool.map(fn, items)


def run_bench(cfg: Config) -> dict:
    """Tune once on validation null data, run every seed, write <results-dir>/<name>.json and
    its figures."""
    start = time.perf_counter()
    pool, map_fn = _pool_map(cfg.workers)
    try:
        tuned = tuning.tune(cfg, map_fn)
        per_seed: dict[str, dict[str, list[float]]] = {}
        records: list[dict] = []
        for seed in cfg.seeds:
            run_cfg = dataclasses.replace(cfg, seed=seed)
            workdir = Path(cfg.out) / f"seed{seed}"
            metrics = train_and_evaluate(run_cfg, workdir, tuned, map_fn)
            for key, value in metrics.items():
                method, metric = key.split("/")
                per_seed.setdefault(method, {}).setdefault(metric, []).append(value)
            records += [dict(r, seed=seed) for r in load_records(workdir)]
    finally:
        if pool is not None:
            pool.shutdown()
    run_cfg = tuning.apply(cfg, tuned)
    metrics = {m: {k: summarize(v) for k, v in per_seed[m].items()} for m in per_seed}
    summary = pooled(records, run_cfg)
    performance = [row for n in cfg.pysiglib_sizes for row in time_grams(n, cfg, cfg.seeds[0])]
    prefix = "" if cfg.name == "quick" else f"{cfg.name}-"
    figs = make_figures(metrics, summary, tuned, run_cfg, prefix)
    doc = results_document(
        PAPER,
        cfg.name,
        list(cfg.seeds),
        metrics,
        make_claims(records, run_cfg),
        time.perf_counter() - start,
        cfg.device,
        performance,
    )
    doc["tuning"] = tuned
    doc["pooled"] = summary
    write_results(results_dir_of(cfg), cfg.name, doc, figs)
    return doc
