"""Command line: `sde-causal {train,eval,bench} [--preset quick|paper|full] [--FIELD VALUE ...]`
and `sde-causal discover --data paths.csv|.npz [...]` for your own paths.

Thin on purpose: flags become a Config (every field is a flag), then the library is called.
Misuse (unknown command, bad preset, bad value, unreadable file) prints one line to stderr and
exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import tyro

from .config import PRESETS, Config, validate

COMMANDS = {
    "train": "run every experiment and method for --seed and write metrics to --out",
    "eval": "print the metrics of a finished run in --out",
    "bench": "run every method over --seeds and write results/<preset>.json",
    "discover": "SigKer-CI discovery on your paths (--data file.csv|.npz): graph and p-values",
    "simulate": "write example paths of a random SDE graph (--out file.csv|.npz) and its graph",
}
USAGE = (
    "usage: sde-causal {train,eval,bench} [--preset quick|paper|full] [--FIELD VALUE ...]\n"
    "       sde-causal discover --data PATHS.csv|.npz [--out DIR] [...]\n"
    "       sde-causal simulate --out PATHS.csv|.npz [--family F] [...]\n\n"
    + "\n".join(f"  {name:8s} {text}" for name, text in COMMANDS.items())
    + "\n\n`sde-causal COMMAND --help` lists every flag with its meaning and default."
)


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports misuse in one line (exit 2) instead of usage + error."""

    def error(self, message: str):
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def discover_parser() -> argparse.ArgumentParser:
    q = PRESETS["quick"]
    ap = _OneLineParser(
        prog="sde-causal discover",
        description=COMMANDS["discover"]
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


def simulate_parser() -> argparse.ArgumentParser:
    from .sde import FAMILIES

    q = PRESETS["quick"]
    ap = _OneLineParser(prog="sde-causal simulate", description=COMMANDS["simulate"] + ".")
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


def parse(command: str, argv: list[str]) -> Config:
    """Split off --preset, then let tyro turn the remaining flags into a Config."""
    preset, rest, i = "quick", [], 0
    while i < len(argv):
        if argv[i] == "--preset":
            if i + 1 >= len(argv):
                raise ValueError(f"--preset needs a value: one of {sorted(PRESETS)}")
            preset, i = argv[i + 1], i + 2
            continue
        if argv[i].startswith("--preset="):
            preset = argv[i].split("=", 1)[1]
        else:
            rest.append(argv[i])
        i += 1
    if preset not in PRESETS:
        raise ValueError(f"--preset must be one of {sorted(PRESETS)}, got {preset!r}")
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            cfg = tyro.cli(
                Config,
                default=PRESETS[preset],
                args=rest,
                prog=f"sde-causal {command}",
                description=f"{COMMANDS[command]}. --preset {'|'.join(PRESETS)} picks the "
                f"defaults (now: {preset}).",
            )
    except SystemExit as exc:
        if exc.code in (0, None):
            raise
        raise ValueError(_first_message(err.getvalue())) from None
    return validate(cfg)


def _first_message(boxed: str) -> str:
    """The first paragraph of tyro's boxed error, as one line."""
    lines = []
    for raw in boxed.splitlines()[1:]:
        text = raw.strip().strip("│").strip()
        if text.startswith(("─", "╰")) or (lines and not text):
            break
        if text:
            lines.append(text)
    return " ".join(lines) or "could not parse the command line"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(
            f"error: unknown command {command!r}; expected one of {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    try:
        if command in ("discover", "simulate"):
            run = run_discover if command == "discover" else run_simulate
            print(json.dumps(run(rest), indent=2))
            return 0
        cfg = parse(command, rest)
        if command == "train":
            from .train import train_and_evaluate

            result = train_and_evaluate(cfg, cfg.out)
        elif command == "eval":
            from .train import evaluate

            result = evaluate(cfg.out)
        else:
            from .bench import run_bench

            result = {c["id"]: c["holds"] for c in run_bench(cfg)["claims"]}
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # an --out / --results-dir that cannot be created or written
        where = exc.filename if exc.filename is not None else "output"
        print(f"error: cannot write {where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse's --help (0) or its one-line misuse message (2)
        return int(exc.code or 0)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
