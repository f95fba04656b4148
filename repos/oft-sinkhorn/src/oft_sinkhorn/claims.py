"""Claims (thresholds in code, each with the result that would fail it and a negative control
that does), performance rows with units, and the figures; all computed from measured metrics."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import scipy.stats
from matplotlib.ticker import NullFormatter

from .config import SOLVERS, Config
from .results import claim, paired_interval, part, part_from_paired
from .train import EXACT_NAMES

POT_TOL = 1e-6  # fails if max |P_ours - P_POT| >= 1e-6 on any seed
GAP_TOL = 0.01  # fails if a restored (feasible) flow costs >= 1% above the optimum
RESIDUAL_TOL = 1e-3  # fails if ||P1 - P^T 1 - s||_1 / ||s||_1 >= 1e-3 for the raw plan
CAPACITY_TOL = 1e-3  # fails if any arc or node bound is exceeded by >= 0.1% of its capacity
FALL = 10.0  # monotone claim fails unless the restored gap falls >= 10x over the schedule
CAPPED_ITER = 100  # negative control: stages stopped after this many jacobi iterations
OLD_CAP = 4000  # the first version's per-stage cap, which pre-empted the tolerance
PAPER_CAPACITATED = (
    "capacity-constrained EOFT-Sinkhorn solves MCF with edge and node capacities (objective close "
    "to exact solvers; at 10k nodes 1,462 s vs 1,425 s for the best exact solver, per the reviews)"
)
UNCAPACITATED, CAPACITATED = ("uniform", "netgen"), ("netgen-cap", "netgen-node")


def t_interval(values) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval of paired differences."""
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if arr.size < 2 or np.all(arr == arr[0]):
        return mean, mean, mean
    half = float(scipy.stats.t.ppf(0.975, arr.size - 1) * arr.std(ddof=1) / np.sqrt(arr.size))
    return mean, mean - half, mean + half


def pooled(table: dict, families, key: str, sizes=None) -> np.ndarray:
    """One metric over every (family, N) cell of `families` (and `sizes`), seeds concatenated."""
    cells = [
        c[key] for (f, n), c in table.items() if f in families and (sizes is None or n in sizes)
    ]
    return np.concatenate([np.asarray(v, float) for v in cells]) if cells else np.zeros(0)


def monotone(cols: dict, eps, slack: float) -> np.ndarray:
    """Per run: restored gap never rises by more than `slack` from one eps to the next, and
    falls at least FALL-fold from the first eps to the last."""
    curves = np.array([cols[f"restored_gap@{e:g}"] for e in eps]).T
    steady = np.all(np.diff(curves, axis=1) <= slack, axis=1)
    return steady & (curves[:, -1] * FALL <= curves[:, 0])


def gate(table, families, sizes) -> dict[str, float]:
    """Worst restored gap, residual, capacity violation and convergence over the cells."""
    get = lambda k: pooled(table, families, k, sizes)
    return {
        "gap": float(get("restored_gap").max()),
        "residual": float(get("residual").max()),
        "violation": float(get("capacity_violation").max()),
        "converged": float(get("converged").min()),
        "runs": int(get("converged").size),
    }


def passes(g: dict, with_capacity: bool) -> bool:
    ok = g["gap"] < GAP_TOL and g["residual"] < RESIDUAL_TOL and g["converged"] == 1
    return ok and (g["violation"] < CAPACITY_TOL or not with_capacity)


def every_run(what: str, values, threshold: float, direction: str, unit: str = "") -> dict:
    """A part over per-run values whose claim is about every run (a worst case, not a mean): the
    interval is [min, max] over the runs, so the part holds only when every run lies on the
    claimed side of the threshold and is contradicted when every run lies on the other side.
    The estimate is the worst run."""
    arr = np.asarray(values, dtype=float)
    worst = arr.max() if direction == "<" else arr.min()
    return part(
        what,
        float(worst),
        (float(arr.min()), float(arr.max())),
        threshold,
        direction,
        int(arr.size),
        unit,
        method="every run: [min, max] over runs",
    )


def count_part(what: str, count: int, runs: int, threshold: float, direction: str) -> dict:
    """A part on an exact count over `runs` runs (a negative control that must fail the check)."""
    return part(what, count, (count, count), threshold, direction, runs, "runs", method="count")


def paired_part(what: str, a, b, threshold: float, direction: str, unit: str = "") -> dict:
    """Paired t interval of a - b over the same runs (instances)."""
    iv = paired_interval(list(map(float, a)), list(map(float, b)))
    out = part_from_paired(what, iv, threshold, direction, unit)
    return out | {"method": "paired t over runs (same instances)"}


def off_device(what: str, estimate: float, n: int, threshold: float, direction: str) -> dict:
    """A speed part measured off the paper's device: reported, with no interval, so it can be
    neither held nor contradicted (the paper's speed statements are for a GPU)."""
    return part(
        what,
        estimate,
        (None, None),
        threshold,
        direction,
        n,
        "log10 ratio",
        method="not decided off the paper's device (CPU run): the estimate is reported only",
    )


def gate_parts(table, fams, sizes, with_capacity: bool) -> list[dict]:
    """The near-optimality gate as parts over every run, the paired margin over the cost-blind
    floor, and the floor as a negative control that must fail the gap gate."""
    get = lambda k: pooled(table, fams, k, sizes)
    out = [
        every_run(
            "restored gap at the smallest eps (feasible flow vs optimum)",
            get("restored_gap"),
            GAP_TOL,
            "<",
        ),
        every_run(
            "balance residual ||P1 - P^T 1 - s||_1 / ||s||_1 of the raw plan",
            get("residual"),
            RESIDUAL_TOL,
            "<",
        ),
        every_run("all eps stages reached tol (1 = yes, per run)", get("converged"), 0.5, ">"),
    ]
    if with_capacity:
        out.append(
            every_run(
                "capacity violation (max over arcs and nodes, relative)",
                get("capacity_violation"),
                CAPACITY_TOL,
                "<",
            )
        )
    out += [
        paired_part(
            "restored gap - cost-blind floor gap", get("restored_gap"), get("floor_gap"), 0.0, "<"
        ),
        every_run(
            f"negative control: cost-blind feasible flow's gap (must stay >= {GAP_TOL:g})",
            get("floor_gap"),
            GAP_TOL,
            ">",
        ),
    ]
    return out


def speed_parts(cfg: Config, table, families, largest: int, slack: float, label: str) -> list[dict]:
    """log10(our wall time / the best exact solver's) per seed at the largest N; decided only on
    a GPU (the paper's device), reported without an interval elsewhere."""
    cells = [table[(f, largest)] for f in families if (f, largest) in table]
    if not cells:
        return []
    ours = np.concatenate([np.asarray(c["seconds"], float) for c in cells])
    best = np.concatenate(
        [
            np.min(
                [np.asarray(c[f"{k}_seconds"], float) for k in EXACT_NAMES if f"{k}_seconds" in c],
                axis=0,
            )
            for c in cells
        ]
    )
    ratio = np.log10(np.maximum(ours, 1e-9)) - np.log10(np.maximum(best, 1e-9))
    what = f"log10(OFT wall time / best exact solver's), {label}, N={largest}"
    threshold = float(np.log10(slack))
    if not str(cfg.device).startswith("cuda"):
        return [
            off_device(what + f" ({cfg.device})", float(ratio.mean()), ratio.size, threshold, "<")
        ]
    iv = paired_interval(
        list(np.log10(np.maximum(ours, 1e-9))), list(np.log10(np.maximum(best, 1e-9)))
    )
    return [part_from_paired(what + f" ({cfg.device})", iv, threshold, "<", "log10 ratio")]


def compute_claims(cfg: Config, table, compared, controlled, pot_runs) -> list[dict]:
    sizes = tuple(cfg.sizes)  # timing rows (one seed) are not part of the claims
    diffs = [r["max_abs_diff"] for r in pot_runs]
    ctrl_diffs = [r["max_abs_diff_2eps"] for r in pot_runs]
    worst_pot, ctrl_pot = max(diffs), min(ctrl_diffs)
    claims = [
        claim(
            "pot-equality",
            f"on bipartite graphs the OFT-Sinkhorn plan equals POT's Sinkhorn plan (max |diff| < {POT_TOL:g} "
            "on every seed); negative control: POT at twice eps must differ by >= that",
            "OFT on a bipartite graph with s = (a, -b) is entropic OT (Sec. 3)",
            f"max |P_ours - P_POT| = {worst_pot:.1e} over seeds {list(cfg.seeds)}; negative control "
            f"(POT at 2 eps): min {ctrl_pot:.1e}, fails",
            test=[
                every_run("max |P_ours - P_POT| per seed", diffs, POT_TOL, "<"),
                every_run(
                    "negative control: max |P_ours - P_POT(2 eps)| per seed",
                    ctrl_diffs,
                    POT_TOL,
                    ">",
                ),
            ],
        )
    ]
    for cid, families, paper in [
        (
            "gap-under-1pct",
            UNCAPACITATED,
            "near-optimal MCF solutions with flow balance kept, 100-5,000 nodes (Uniform-MCF, NETGEN)",
        ),
        (
            "capacitated-near-optimal",
            CAPACITATED,
            PAPER_CAPACITATED,
        ),
    ]:
        fams = [f for f in families if f in cfg.families]
        if not fams:
            continue
        with_capacity = families == CAPACITATED
        g = gate(table, fams, sizes)
        diff = pooled(table, fams, "restored_gap", sizes) - pooled(table, fams, "floor_gap", sizes)
        mean, lo, hi = t_interval(diff)
        floor = float(pooled(table, fams, "floor_gap", sizes).min())
        test = gate_parts(table, fams, sizes, with_capacity)
        text = (
            f"{g['runs']} runs: worst restored gap {g['gap']:.2e}, worst residual {g['residual']:.1e}, "
            f"all stages converged: {g['converged'] == 1}; restored gap - cost-blind floor gap = "
            f"{mean:.3f} [95% t: {lo:.3f}, {hi:.3f}]; floor (cost-blind feasible flow): best gap "
            f"{floor:.2f}, fails"
        )
        if with_capacity:
            text += f"; worst capacity violation {g['violation']:.1e}"
            ctrl = [c for (k, f), c in controlled.items() if k == "no-capacities"]
            if ctrl:
                viol = np.concatenate([c["capacity_violation"] for c in ctrl])
                text += (
                    f"; negative control (capacities dropped, N={cfg.control_n}): least violation "
                    f"{viol.min():.2f}, fails"
                )
                test.append(
                    every_run(
                        f"negative control: capacity violation with capacities dropped, N={cfg.control_n} "
                        f"(must stay >= {CAPACITY_TOL:g})",
                        viol,
                        CAPACITY_TOL,
                        ">",
                    )
                )
            if "netgen-node" in fams:
                bind = pooled(table, ["netgen-node"], "binding_node_bounds", sizes)
                effect = pooled(table, ["netgen-node"], "node_bound_effect", sizes)
                text += (
                    f"; netgen-node: {bind.mean():.1f} binding node bounds per instance, which raise "
                    f"the optimum by {effect.mean():.1%} on average"
                )
        claims.append(
            claim(
                cid,
                f"at the smallest eps, on {', '.join(fams)} with N in {list(sizes)}: on every run the "
                f"plan's feasibility-restored flow is within {GAP_TOL:.0%} of the optimum, its balance "
                f"residual < {RESIDUAL_TOL:g}"
                + (f", capacity violation < {CAPACITY_TOL:g}" if with_capacity else "")
                + ", and every eps stage reached tol; it beats the cost-blind floor (paired), and the "
                "floor"
                + (" and the capacity-blind solve" if with_capacity else "")
                + " fail the gate",
                paper,
                text,
                test=test,
            )
        )
    slack = 2 * cfg.tol  # a rise above what the stopping tolerance allows fails the run
    cells = [c for (f, n), c in table.items() if n in sizes]
    capped = [c for (k, f), c in controlled.items() if k == "capped"]
    n_ok = sum(int(monotone(c, cfg.eps, slack).sum()) for c in cells)
    n_runs = sum(len(c["restored_gap"]) for c in cells)
    c_ok = sum(int(monotone(c, cfg.eps, slack).sum()) for c in capped)
    c_runs = sum(len(c["restored_gap"]) for c in capped)
    c_neg = sum(int(np.sum(np.asarray(c["gap"]) < 0)) for c in capped)
    curves = np.concatenate(
        [np.array([c[f"restored_gap@{e:g}"] for e in cfg.eps]).T for c in cells]
    )
    rises = np.diff(curves, axis=1).max(axis=1) if len(cfg.eps) > 1 else np.zeros(len(curves))
    falls = curves[:, -1] / np.maximum(curves[:, 0], 1e-300)
    mono_test = [
        every_run(
            "largest rise of the restored gap from one eps to the next, per run", rises, slack, "<"
        ),
        every_run(
            "restored gap at the smallest eps / at the largest eps, per run", falls, 1 / FALL, "<"
        ),
    ]
    if capped:
        mono_test.append(
            count_part(
                f"negative control: capped-jacobi runs (N={cfg.control_n}) failing the monotone check",
                c_runs - c_ok,
                c_runs,
                0.5,
                ">",
            )
        )
    claims.append(
        claim(
            "gap-monotone-in-eps",
            f"the gap of the feasibility-restored flow never rises by more than {slack:g} from one eps "
            f"to the next and falls at least {FALL:g}-fold from the largest to the smallest eps, on "
            f"every run; negative control: jacobi capped at {CAPPED_ITER} iterations per stage fails "
            "this on some run",
            "the entropic bias vanishes as eps -> 0 (sensitivity study over eps in [5e-1, 1e-4])",
            f"{n_ok}/{n_runs} runs; negative control (jacobi capped at {CAPPED_ITER} iterations per stage, "
            f"N={cfg.control_n}): {c_ok}/{c_runs} runs, and {c_neg} of them end with a signed raw "
            f"gap below the optimum",
            test=mono_test,
        )
    )
    jac = [c for (s, f), c in compared.items() if s == "jacobi"]
    if jac:
        its = np.concatenate([[c[f"iterations@{e:g}"] for e in cfg.eps] for c in jac], axis=1)
        conv = np.concatenate([c["converged"] for c in jac])
        over = int(np.sum(its > OLD_CAP))
        capped_conv = np.concatenate([np.asarray(c["converged"]) for c in capped] or [[0.0]])
        ratios = []
        for solver in SOLVERS[1:]:
            pairs = [
                np.log10(np.asarray(compared[("jacobi", f)]["iterations"]))
                - np.log10(np.asarray(compared[(solver, f)]["iterations"]))
                for f in cfg.compare_families
                if (solver, f) in compared
            ]
            mean, lo, hi = t_interval(np.concatenate(pairs))
            ratios.append(f"{solver} {10**mean:.1f}x [95% t: {10**lo:.1f}, {10**hi:.1f}]")
        jac_test = [
            every_run("plain jacobi: all eps stages reached tol (1 = yes, per run)", conv, 0.5, ">")
        ]
        if capped:
            jac_test.append(
                count_part(
                    f"negative control: jacobi capped at {CAPPED_ITER} it/stage (N={cfg.control_n}), "
                    "runs that missed tol",
                    int(capped_conv.size - capped_conv.sum()),
                    int(capped_conv.size),
                    0.5,
                    ">",
                )
            )
        claims.append(
            claim(
                "jacobi-converges",
                f"plain OFT-Sinkhorn (damped Jacobi) reaches tol={cfg.tol:g} at every eps stage within "
                f"{cfg.compare_max_iter} iterations (N={cfg.compare_n}, {', '.join(cfg.compare_families)}), "
                f"on every run; negative control: capped at {CAPPED_ITER} iterations per stage, some run "
                "misses tol",
                "OFT-Sinkhorn converges globally, linearly (Theorem 1)",
                f"{int(conv.sum())}/{conv.size} runs converged; iterations per stage up to "
                f"{int(its.max())} (median {int(np.median(its))}); negative controls: jacobi "
                f"capped at {CAPPED_ITER} iterations per stage (N={cfg.control_n}) converged in "
                f"{int(capped_conv.sum())}/{capped_conv.size} runs, and the first version's "
                f"{OLD_CAP}-iteration cap would stop {over}/{its.size} stages early; "
                f"plan evaluations of jacobi over the accelerated solvers (paired geometric mean): "
                + ", ".join(ratios),
                test=jac_test,
            )
        )
    claims += speed_claims(cfg, table, sizes)
    return claims


def speed_claims(cfg: Config, table, sizes) -> list[dict]:
    """The paper's two speed statements as claims, decided only on a GPU run (never on CPU)."""
    largest = max(sizes)
    out = []
    for cid, families, slack, statement, paper in [
        (
            "speed-uncapacitated",
            UNCAPACITATED,
            1.0,
            (
                "on the paper's device (a GPU), the whole eps schedule to tol is faster than the best "
                "exact solver (OR-Tools, networkx, HiGHS on the CPU) on uncapacitated instances at the "
                "largest N; a CPU run reports the ratio and stays inconclusive"
            ),
            (
                "GPU: about 0.17 s against hundreds of seconds for exact solvers at 10k nodes "
                "(uncapacitated, as quoted in the reviews)"
            ),
        ),
        (
            "speed-capacitated",
            CAPACITATED,
            1.1,
            (
                "on the paper's device (a GPU), the whole eps schedule to tol takes at most 1.1x the "
                "best exact solver's time on arc- and node-capacitated instances at the largest N; a "
                "CPU run reports the ratio and stays inconclusive"
            ),
            (
                "GPU, 10k nodes with node and edge capacities: 1,462 s vs 1,425 s for the best exact "
                "solver (within 1.1x)"
            ),
        ),
    ]:
        fams = [f for f in families if f in cfg.families]
        test = speed_parts(cfg, table, fams, largest, slack, "+".join(fams)) if fams else []
        if not test:
            continue
        ratio = 10 ** test[0]["estimate"]
        out.append(
            claim(
                cid,
                statement,
                paper,
                f"{cfg.device}, N={largest}, {'+'.join(fams)}: our time / best exact solver's = "
                f"{ratio:.3g}x (geometric mean over {test[0]['n']} runs)"
                + (
                    ""
                    if str(cfg.device).startswith("cuda")
                    else "; not the paper's device, so not decided"
                ),
                test=test,
            )
        )
    return out


def growth_exponent(sizes, seconds) -> float:
    """k in seconds ~ N^k, least squares on log-log axes."""
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def row(rid, what, unit, ours, peer=None, peer_value=None, higher=False) -> dict:
    out = {"id": rid, "what": what, "unit": unit, "higher_is_better": higher, "ours_value": ours}
    return out | ({"peer": peer, "peer_value": peer_value} if peer else {})


def performance(cfg: Config, table, compared) -> list[dict]:
    """Wall time to tolerance against each exact solver, growth exponents, solver comparison."""
    rows = []
    families = list(dict.fromkeys(f for f, _ in table))
    for family in families:
        sizes = sorted(n for f, n in table if f == family)
        for n in sizes:
            cols = table[(family, n)]
            for key, peer in EXACT_NAMES.items():
                rows.append(
                    row(
                        f"{family}-n{n}-{key}",
                        f"wall time of the whole eps schedule to tol ({cfg.solver}, {cfg.kernel}, "
                        f"{cfg.device}) vs the exact solver, {family}, N={n} "
                        f"({np.mean(cols.get('arcs', [0])):.0f} arcs), mean of "
                        f"{len(cols['seconds'])} seed(s)",
                        "s",
                        float(np.mean(cols["seconds"])),
                        peer,
                        float(np.mean(cols[f"{key}_seconds"])),
                    )
                )
        if len(sizes) >= 2:
            ours_k = growth_exponent(sizes, [np.mean(table[(family, n)]["seconds"]) for n in sizes])
            for key, peer in EXACT_NAMES.items():
                peer_k = growth_exponent(
                    sizes, [np.mean(table[(family, n)][f"{key}_seconds"]) for n in sizes]
                )
                rows.append(
                    row(
                        f"{family}-growth-{key}",
                        f"exponent k of wall time ~ N^k over N={sizes}",
                        "exponent",
                        ours_k,
                        peer,
                        peer_k,
                    )
                )
    for family in cfg.compare_families:
        plain = compared.get(("jacobi", family))
        for solver in SOLVERS:
            cols = compared.get((solver, family))
            if cols is None or solver == "jacobi" or plain is None:
                continue
            rows.append(
                row(
                    f"solver-{solver}-vs-jacobi-{family}",
                    f"wall time of the schedule to tol, {solver} vs plain OFT-Sinkhorn, {family}, "
                    f"N={cfg.compare_n}, mean of seeds",
                    "s",
                    float(np.mean(cols["seconds"])),
                    "jacobi (plain OFT-Sinkhorn)",
                    float(np.mean(plain["seconds"])),
                )
            )
    return rows


def figures(cfg: Config, table, compared, prefix: str = "") -> dict:
    """The benchmark's figures: file name (prefixed by `prefix`) -> matplotlib figure."""
    out = {}
    families = list(cfg.families)
    fig, axes = plt.subplots(1, len(families), figsize=(4 * len(families), 3.4), sharey=True)
    for ax, family in zip(np.atleast_1d(axes), families):
        for n in cfg.sizes:
            cols = table[(family, n)]
            gaps = [np.mean(cols[f"restored_gap@{e:g}"]) for e in cfg.eps]
            ax.loglog(cfg.eps, np.maximum(gaps, 1e-8), "o-", label=f"N={n}")
        ax.axhline(GAP_TOL, color="grey", ls="--", lw=1)
        ax.invert_xaxis()
        ax.set(title=family, xlabel="eps / max cost")
    np.atleast_1d(axes)[0].set_ylabel("gap of the restored flow (mean over seeds)")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    out[f"{prefix}gap_vs_eps.png"] = fig
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4), sharey=True)
    for ax, family in zip(axes, ("uniform", "netgen")):
        sizes = sorted(n for f, n in table if f == family)
        cols = [table[(family, n)] for n in sizes]
        if not sizes:
            continue
        ax.loglog(sizes, [np.mean(c["seconds"]) for c in cols], "o-", label=f"OFT ({cfg.solver})")
        for key, peer in EXACT_NAMES.items():
            ax.loglog(sizes, [np.mean(c[f"{key}_seconds"]) for c in cols], "s--", label=peer)
        ax.set(title=family, xlabel="N")
        ax.set_xticks(sizes, [str(n) for n in sizes], minor=False)
        ax.xaxis.set_minor_formatter(NullFormatter())
    axes[0].set_ylabel(f"wall time (s), {cfg.device}")
    drawn = [ax for ax in axes if ax.get_legend_handles_labels()[0]]
    if drawn:
        drawn[0].legend(fontsize=8)
    out[f"{prefix}time_vs_n.png"] = fig
    fig, axes = plt.subplots(1, len(cfg.compare_families), figsize=(4.2 * 2, 3.4), sharey=True)
    for ax, family in zip(np.atleast_1d(axes), cfg.compare_families):
        for solver in SOLVERS:
            cols = compared.get((solver, family))
            if cols:
                its = [np.mean(cols[f"iterations@{e:g}"]) for e in cfg.eps]
                ax.loglog(cfg.eps, np.maximum(its, 1), "o-", label=solver)
        ax.invert_xaxis()
        ax.set(title=f"{family}, N={cfg.compare_n}", xlabel="eps / max cost")
    np.atleast_1d(axes)[0].set_ylabel("iterations to tol (mean over seeds)")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    out[f"{prefix}solvers.png"] = fig
    return out
