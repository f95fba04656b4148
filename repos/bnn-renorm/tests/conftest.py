"""Shared fixtures: the quick preset shrunk until a whole run takes a few seconds, and one run of
the README's Quick start commands shared by the tests that inspect its output.

Every shrunk width is 3 and every shrunk training set has 6 points, so each jitted sampler
compiles once per session (JAX compilation dominates the suite's time).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from pathlib import Path

import pytest

from bnn_renorm.cli import main
from bnn_renorm.config import PRESETS

README = Path(__file__).resolve().parents[1] / "README.md"

# Flags that shrink any preset to the tiny size used by the tests (also used on README commands).
SHRINK = {
    "n0": 12,
    "p": 6,
    "alphas": (2.0,),
    "n_test": 3,
    "gibbs_alphas": (2.0,),
    "gibbs_sweeps": 30,
    "burn_in": 5,
    "relu_p": 6,
    "relu_alphas": (2.0,),
    "nuts_warmup": 10,
    "nuts_samples": 10,
    "sub_relu_p": 6,
    "sub_relu_n0": 64,
    "sub_relu_widths": (3,),
    "sub_nuts_warmup": 10,
    "sub_nuts_samples": 10,
    "sub_restarts": 1,
    "perf_width": 3,
    "perf_p": 6,
    "perf_n0": 12,
    "seeds": (0,),
    "quiet": True,
}


def shrink_flags() -> list[str]:
    flags = []
    for name, value in SHRINK.items():
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
    """Every `bnn-renorm ...` line of the README's Quick start section."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [shlex.split(c) for c in re.findall(r"^(bnn-renorm .+)$", section, re.MULTILINE)]


@pytest.fixture(scope="session")
def readme_run(tmp_path_factory):
    """Run the README's Quick start commands once, shrunk; return (folder, commands, exit codes)."""
    folder = tmp_path_factory.mktemp("readme")
    commands = readme_commands()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        codes = [main(argv[1:] + shrink_flags()) for argv in commands]
    finally:
        os.chdir(cwd)
    return folder, commands, codes
