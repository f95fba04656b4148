#!/usr/bin/env python3
"""Spread benches over machines: one job per (paper, seed) through submitit, then one merge.

    ./run -s launch -- --papers leq,degem --preset full --executor slurm --seeds 0 1 2 \\
        --slurm-partition gpu --gpus-per-job 1 --cpus-per-job 8 --mem-gb 64 --timeout-min 720
    ./run -s launch -- --papers oft-sinkhorn --preset quick --executor local --seeds 0 1

Each job runs `<cli> bench --preset P --seeds S --partial-out PART` in the paper's own
environment (the nox session bench-<slug> makes it; `./run -s launch` does that first); once every
job of a paper has finished, `<cli> bench --preset P --merge PART... --results-dir DIR` computes
the claims over all seeds and writes DIR/<slug>/<preset>.json (default: the paper's results/). The
`local` executor runs the same jobs as processes on this machine; `slurm` submits them with
sbatch from a login node (submitit's AutoExecutor: the parameters above map to its slurm_*
settings; logs and pickles go to --work-dir, which must be on a filesystem the nodes share).
A paper's bench must split by seed (its hooks.SPLITS_BY_SEED); the others refuse --partial-out.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_command(cmd: list[str], cwd: str, env: dict[str, str]) -> str:
    """What one job does (pickled by value, so the job needs only submitit and this function)."""
    done = subprocess.run(cmd, cwd=cwd, env={**os.environ, **env}, check=False, text=True,
                          capture_output=True)  # fmt: skip
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{tail}")
    return done.stdout


def executable(env_dir: Path, slug: str, cli: str) -> Path:
    path = env_dir / f"bench-{slug}" / "bin" / cli
    if not path.exists():
        raise SystemExit(
            f"error: {path} does not exist: make the environment first "
            f"(./run -s bench-{slug} --install-only, which ./run -s launch does)"
        )
    return path


def make_executor(args: argparse.Namespace, folder: Path):
    import cloudpickle
    import submitit

    if __name__ != "__main__":  # imported (tests, other tools): ship run_command by value too
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    executor = submitit.AutoExecutor(folder=str(folder), cluster=args.executor)
    params = {"timeout_min": args.timeout_min, "cpus_per_task": args.cpus_per_job}
    if args.gpus_per_job:
        params["gpus_per_node"] = args.gpus_per_job
    if args.executor == "slurm":
        params["slurm_mem_gb"] = args.mem_gb
        if args.slurm_partition:
            params["slurm_partition"] = args.slurm_partition
    executor.update_parameters(name="iclr25-repro", **params)
    return executor


def launch(args: argparse.Namespace) -> int:
    papers = tomllib.loads((args.root / "meta.toml").read_text())["papers"]
    slugs = [s.strip() for s in args.papers.split(",") if s.strip()]
    unknown = [s for s in slugs if s not in papers]
    if not slugs or unknown:
        print(f"error: --papers names no paper of meta.toml: {unknown or args.papers!r}",
              file=sys.stderr)  # fmt: skip
        return 2
    env = {"HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}
    work = args.work_dir.resolve()
    executor = make_executor(args, work / "logs")
    jobs: dict[str, list[tuple[int, Path, object]]] = {}
    for slug in slugs:
        entry = papers[slug]
        cli = str(executable(args.env_dir, slug, entry["cli"]))
        project = args.root / entry["path"]
        for seed in args.seeds:
            part = work / slug / f"{args.preset}-seed{seed}.json"
            part.parent.mkdir(parents=True, exist_ok=True)
            cmd = [cli, "bench", "--preset", args.preset, "--seeds", str(seed),
                   "--partial-out", str(part), "--out", str(work / slug / f"runs-seed{seed}"),
                   "--quiet", *args.bench_args]  # fmt: skip
            job = executor.submit(run_command, cmd, str(project), env)
            jobs.setdefault(slug, []).append((seed, part, job))
            print(f"{slug} seed {seed}: job {job.job_id}")
    status = 0
    for slug, entries in jobs.items():
        failed = []
        for seed, _, job in entries:
            try:
                job.result()
            except Exception as exc:  # noqa: BLE001 (submitit re-raises the job's own error)
                failed.append(f"seed {seed}: {exc}")
        if failed:
            print(f"{slug}: {len(failed)} job(s) failed, no merge:\n  " + "\n  ".join(failed))
            status = 1
            continue
        entry = papers[slug]
        results_dir = (
            (args.results_dir / slug)
            if args.results_dir
            else (args.root / entry["path"] / "results")
        )
        cmd = [str(executable(args.env_dir, slug, entry["cli"])), "bench", "--preset",
               args.preset, "--merge", *(str(p) for _, p, _ in entries),
               "--results-dir", str(results_dir), *args.bench_args]  # fmt: skip
        try:
            print(run_command(cmd, str(args.root / entry["path"]), env).strip())
        except RuntimeError as exc:
            print(f"{slug}: merge failed: {exc}")
            status = 1
            continue
        print(f"{slug}: merged {len(entries)} seeds -> {results_dir}/{args.preset}.json")
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", required=True, help="comma-separated slugs of meta.toml")
    ap.add_argument("--preset", default="full")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--executor", choices=("local", "slurm"), default="local")
    ap.add_argument("--timeout-min", type=int, default=720, help="per job")
    ap.add_argument("--cpus-per-job", type=int, default=2)
    ap.add_argument("--gpus-per-job", type=int, default=0)
    ap.add_argument("--mem-gb", type=int, default=32, help="slurm only")
    ap.add_argument("--slurm-partition", default="", help="slurm only")
    ap.add_argument(
        "--results-dir",
        type=Path,
        help="write DIR/<slug>/<preset>.json (default: each paper's results/)",
    )
    ap.add_argument("--work-dir", type=Path, default=ROOT / "runs" / "launch",
                    help="partial files, job logs (shared by the nodes under slurm)")  # fmt: skip
    ap.add_argument("--env-dir", type=Path, default=ROOT / ".nox",
                    help="where the bench-<slug> environments are")  # fmt: skip
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("bench_args", nargs="*", help="more bench flags, after --")
    return launch(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
