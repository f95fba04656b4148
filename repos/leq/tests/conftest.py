"""Shared fixtures: the quick preset shrunk until a run takes seconds (the README's Quick start,
run once by the generated ../conftest.py, is shrunk by the same flags).

Every test uses the same shrunk sizes so that each jitted update compiles once per session
(JAX compilation dominates the suite's time).
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
import tempfile
import tomllib
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

from leq.config import PRESETS

# The tiny size of every test: the [readme.shrink] of tests/skeleton.toml, which the generated
# ../conftest.py also adds to the README commands.
SKELETON = tomllib.loads((Path(__file__).parent / "skeleton.toml").read_text())
SHRINK = {
    name: tuple(v) if isinstance(v, list) else v for name, v in SKELETON["readme"]["shrink"].items()
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        **SHRINK,
    )
