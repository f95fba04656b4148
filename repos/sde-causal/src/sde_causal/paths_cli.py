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

DISCOVER_HELP = "SigKer-CI discovery on your paths (--data file.csv|.npz): graph and p-values"
SIMULATE_HELP = "write example paths of a random SDE graph (--out file.csv|.npz) and its graph"


def discover_parser() -> OneLineParser:
    q = PRESETS["quick"]
    ap = OneLineParser(
        prog="sde-causal discover",
        description=DISCOVER_HELP
        + ". The file is a tidy table: columns time, path_id and one column per variable, one "
        "row per (path, time); every path needs the same number of times (own times allowed).",
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
    return {"out": args.out, "family": args.family, "variables": names, "true_edges": edges}


def run_discover(argv: list[str]) -> dict:
    """Read the paths, run Alg. 1 with SigKer-CI, write discovery.json and graph.png."""
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
    test = discovery.SigKerTest(data, args.refinement, args.n_perm, args.ridge, args.seed)
    graph, pmax = discovery.discover(d, test, args.alpha, args.max_cond)
    result = {
        "data": str(args.data),
        "variables": names,
        "n_paths": n,
        "cut": cut,
        "horizon": horizon,
        "alpha": args.alpha,
        "edges": [
            {"from": names[a], "to": names[b], "p": float(pmax[a, b])}
            for a, b in np.argwhere(graph).tolist()
        ],
        # the largest p-value each candidate edge saw (the one that removed it, if removed)
        "p_max": {
            f"{names[a]}->{names[b]}": float(pmax[a, b])
            for a in range(d)
            for b in range(d)
            if a != b
        },
    }
    out = Path(args.out)
    atomic_write_json(out / "discovery.json", result)
    graph_figure(names, graph, pmax, out / "graph.png")
    if not args.quiet:
        print(f"{n} paths, {d} variables, cut s={cut:g}, horizon h={horizon:g}", file=sys.stderr)
        for e in result["edges"]:
            print(f"  {e['from']} -> {e['to']}   p = {e['p']:.4g}", file=sys.stderr)
        print(f"wrote {out / 'discovery.json'} and {out / 'graph.png'}", file=sys.stderr)
    return result
