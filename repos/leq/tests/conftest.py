"""Shared fixtures: the quick preset shrunk until a run takes seconds, and one run of the
README's Quick start commands shared by the tests that inspect its output.

Every test uses the same shrunk sizes so that each jitted update compiles once per session
(JAX compilation dominates the suite's time).
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    # One XLA compilation cache for the session, shared with the benchmark's worker processes,
    # so that the workers load what this process compiled (the keys include the XLA flags).
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="leq-tests-xla-")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    atexit.register(shutil.rmtree, os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)

import pytest

from leq.cli import main
from leq.config import PRESETS

README = Path(__file__).resolve().parents[1] / "README.md"

SHRINK = {
    "n_transitions": 2000,
    "episode_len": 50,
    "eval_episodes": 8,
    "hidden": 16,
    "layers": 1,
    "model_members": 2,
    "model_elites": 1,
    "model_hidden": 16,
    "model_layers": 1,
    "model_steps": 100,
    "bc_steps": 10,
    "steps": 20,
    "batch": 16,
    "horizon": 2,
    "rollout_every": 10,
    "rollout_states": 32,
    "perf_steps": 10,
    "methods": ("LEQ", "IQL", "MB-onestep"),
    "dense_env": "",
    "seeds": (0,),
    "quiet": True,
    "workers": 1,
}


def shrink_flags(extra: dict | None = None) -> list[str]:
    flags = []
    for name, value in {**SHRINK, **(extra or {})}.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif isinstance(value, tuple):
            flags += [flag, *map(str, value)]
        else:
            flags += [flag, str(value)]
    return flags


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        **SHRINK,
    )


def readme_commands() -> list[list[str]]:
    """Every `leq ...` line of the README's Quick start section."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [shlex.split(c) for c in re.findall(r"^(leq .+)$", section, re.MULTILINE)]


@pytest.fixture(scope="session")
def readme_run(tmp_path_factory):
    """Run the README's Quick start commands once, shrunk; return (folder, commands, codes)."""
    folder = tmp_path_factory.mktemp("readme")
    commands = readme_commands()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        codes = [main(argv[1:] + shrink_flags()) for argv in commands]
    finally:
        os.chdir(cwd)
    return folder, commands, codes
