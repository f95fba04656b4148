"""The commands for the user's own paths, with flags of their own (hooks.COMMANDS, raw):
`discover` runs SigKer-CI discovery (Alg. 1) on a paths file, `simulate` writes example paths of
a random SDE graph in that file format. Misuse is a ValueError (one line, exit 2, from cli.main).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .commands import OneLineParser
from .config import PRESETS

DISCOVER_HELP = (
    "causal discovery on your paths (--data file.csv|.npz) with SigKer-CI, PCMCI and/or "
    "Granger: graph and p-values"
)
METHODS = ("sigker", "pcmci", "granger")
# Measured power of SigKer-CI on single edges (README Results; raw power at alpha 0.05, pooled
# over the 3 seeds of each preset): what a user can expect from one data set of n paths.
POWER_NOTE = {
    "diffusion": "diffusion-only edges are weak: measured power 0.25 at n = 100, 0.79 at n = 400",
    "quadratic": "quadratic-drift edges: measured power 0.67 at n = 100",
}
SIMULATE_HELP = "write example paths of a random SDE graph (--out file.csv|.npz) and its graph"


def discover_parser() -> OneLineParser:
    q = PRESETS["quick"]
    ap = OneLineParser(
        prog="sde-causal discover",
        description=DISCOVER_HELP
        + ". The file is a tidy table: columns time, path_id and one column per variable, one "
        "row per (path, time); every path needs the same number of times (own times allowed). "
        "An .npz may instead hold an array 'paths' of shape (paths, times, variables), with "
        "optional 'times' ((times,) or (paths, times); default evenly on [0, 1]) and 'names'.",
    )
    ap.add_argument("--data", required=True, help="paths file, .csv or .npz (see above)")
    ap.add_argument("--out", default="runs/discover", help="folder for discovery.json, graph.png")
    ap.add_argument("--cut", type=float, help="cut time s (default: middle of the time range)")
    ap.add_argument("--horizon", type=float, help="future length h (default: up to the end)")
    ap.add_argument("--alpha", type=float, default=q.alpha, help="level of tests and BH step")
    ap.add_argument("--n-perm", type=int, default=q.n_perm, help="permutations per CI test")
    ap.add_argument("--ridge", type=float, default=q.ridge, help="kernel ridge, multiple of n")
    ap.add_argument("--refinement", type=int, default=q.refinement, help="dyadic refinement")
    ap.add_argument("--max-cond", type=int, help="largest conditioning set (default: d - 2)")
    ap.add_argument(
        "--method",
        default="sigker",
        choices=(*METHODS, "all"),
        help="sigker (Alg. 1 with SigKer-CI), pcmci (tigramite ParCorr), granger (linear, "
        "full conditioning), or all three on the same data",
    )
    ap.add_argument(
        "--statistic",
        default="hsic",
        choices=("hsic", "sdcit"),
        help="SigKer-CI statistic: hsic (residualised HSIC, ours) or sdcit (the paper's "
        "SDCIT-style self-discrepancy, our reconstruction; no ridge)",
    )
    ap.add_argument("--lags", type=int, default=2, help="Granger lags (tuned on null data: 2)")
    ap.add_argument("--tau-max", type=int, default=1, help="PCMCI tau_max (tuned: 1)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the permutations")
    ap.add_argument("--quiet", action="store_true", help="print only the JSON")
    return ap


def simulate_parser() -> OneLineParser:
    from .sde import FAMILIES

    q = PRESETS["quick"]
    ap = OneLineParser(prog="sde-causal simulate", description=SIMULATE_HELP + ".")
    ap.add_argument("--out", required=True, help="file to write, .csv or .npz (tidy table)")
    ap.add_argument("--family", default="linear", choices=FAMILIES, help="SDE family")
    ap.add_argument("--variables", type=int, default=3, help="number of variables d")
    ap.add_argument("--n-paths", type=int, default=q.n_paths, help="independent paths")
    ap.add_argument("--n-obs", type=int, default=q.n_obs, help="observation times per path")
    ap.add_argument("--irregular", action="store_true", help="per-path random observation times")
    ap.add_argument("--seed", type=int, default=0, help="seed of graph, parameters and noise")
    return ap


def run_simulate(argv: list[str]) -> dict:
    """A random DAG in one SDE family, its paths written as a tidy table; returns the graph."""
    from . import paths_io, sde

    args = simulate_parser().parse_args(argv)
    if not args.out.endswith((".csv", ".npz")):
        raise ValueError(f"--out must end in .csv or .npz, got {args.out!r}")
    if args.variables < 2 or args.n_paths < 8:
        raise ValueError(
            f"need --variables >= 2 and --n-paths >= 8, got {args.variables}, {args.n_paths}"
        )
    q = PRESETS["quick"]
    rng = np.random.default_rng([args.seed, 3])
    graph = sde.random_dag(args.variables, rng)
    model = sde.model_from_graph(graph, args.family, rng)
    fine = sde.simulate(model, args.n_paths, q.fine_steps, args.seed)
    paths, times = sde.observe(fine, args.n_obs, args.seed, irregular=args.irregular)
    names = [f"X{k}" for k in range(args.variables)]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    paths_io.write_paths(args.out, paths, times, names)
    edges = [f"{names[a]}->{names[b]}" for a, b in np.argwhere(graph).tolist()]
    out = {"out": args.out, "family": args.family, "variables": names, "true_edges": edges}
    if args.family in POWER_NOTE:
        out["power_note"] = f"n = {args.n_paths} paths; {POWER_NOTE[args.family]}"
        print(f"note: {out['power_note']}", file=sys.stderr)
    return out


def run_discover(argv: list[str]) -> dict:
    """Read the paths, run the chosen method(s), write discovery.json and graph(-method).png."""
    from . import discovery, paths_io
    from .figures import graph_figure
    from .results import atomic_write_json

    args = discover_parser().parse_args(argv)
    if not 0 < args.alpha < 1:
        raise ValueError(f"--alpha must be in (0, 1), got {args.alpha}")
    if args.n_perm < 1 or args.refinement < 0 or args.ridge <= 0:
        raise ValueError(
            f"need --n-perm >= 1, --refinement >= 0, --ridge > 0; got {args.n_perm}, "
            f"{args.refinement}, {args.ridge}"
        )
    paths, times, names = paths_io.read_paths(args.data)
    n, _, d = paths.shape
    if n < 8 or d < 2:
        raise ValueError(
            f"{args.data}: {n} paths of {d} variables; need >= 8 paths, >= 2 variables"
        )
    t0, t1 = float(times[:, 0].max()), float(times[:, -1].min())
    cut = (t0 + t1) / 2 if args.cut is None else args.cut
    horizon = t1 - cut if args.horizon is None else args.horizon
    data = discovery.PathData(paths, times, cut, horizon, names=names)
    if args.lags < 1 or args.tau_max < 1:
        raise ValueError(f"need --lags >= 1, --tau-max >= 1; got {args.lags}, {args.tau_max}")
    if max(args.lags, args.tau_max) >= paths.shape[1] - 1:
        raise ValueError(
            f"{args.data}: {paths.shape[1]} times per path; --lags / --tau-max must be below "
            f"{paths.shape[1] - 1}"
        )
    chosen = METHODS if args.method == "all" else (args.method,)
    found = {m: _run_method(m, data, args) for m in chosen}

    def edge_list(graph: np.ndarray, p: np.ndarray) -> list[dict]:
        return [
            {"from": names[a], "to": names[b], "p": float(p[a, b])}
            for a, b in np.argwhere(graph).tolist()
        ]

    def p_table(p: np.ndarray) -> dict:
        return {
            f"{names[a]}->{names[b]}": float(p[a, b]) for a in range(d) for b in range(d) if a != b
        }

    first_graph, first_p = found[chosen[0]]
    result = {
        "data": str(args.data),
        "variables": names,
        "n_paths": n,
        "cut": cut,
        "horizon": horizon,
        "alpha": args.alpha,
        "method": chosen[0],
        "edges": edge_list(first_graph, first_p),
        # the largest p-value each candidate edge saw (the one that removed it, if removed)
        "p_max": p_table(first_p),
        "methods": {m: {"edges": edge_list(g, p), "p": p_table(p)} for m, (g, p) in found.items()},
    }
    out = Path(args.out)
    atomic_write_json(out / "discovery.json", result)
    graph_figure(names, first_graph, first_p, out / "graph.png")
    for m in chosen[1:]:
        graph_figure(names, *found[m], out / f"graph-{m}.png")
    if not args.quiet:
        print(f"{n} paths, {d} variables, cut s={cut:g}, horizon h={horizon:g}", file=sys.stderr)
        for m in chosen:
            edges = result["methods"][m]["edges"]
            print(f"{m}: {len(edges)} edge(s) at alpha {args.alpha}", file=sys.stderr)
            for e in edges:
                print(f"  {e['from']} -> {e['to']}   p = {e['p']:.4g}", file=sys.stderr)
        if "sigker" in chosen and not found["sigker"][0].any():
            print(
                f"note: no edge at n = {n} paths; SigKer-CI's power grows with n ("
                + "; ".join(POWER_NOTE.values())
                + ")",
                file=sys.stderr,
            )
        print(f"wrote {out / 'discovery.json'} and {out / 'graph.png'}", file=sys.stderr)
    return result


def _run_method(method: str, data, args) -> tuple[np.ndarray, np.ndarray]:
    """(graph, p-values) of one method on the user's data, edges kept by BH at --alpha."""
    from . import baselines, discovery

    d = data.d
    if method == "sigker":
        test = discovery.SigKerTest(
            data, args.refinement, args.n_perm, args.ridge, args.seed, statistic=args.statistic
        )
        return discovery.discover(d, test, args.alpha, args.max_cond)
    if method == "granger":
        p = baselines.granger_pvalues(data, args.lags)
    else:
        p = baselines.pcmci_pvalues(data.paths, args.tau_max)
    return discovery.bh_prune(~np.eye(d, dtype=bool), p, args.alpha), p
