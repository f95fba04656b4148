"""Shared fixtures: the quick preset shrunk until a whole run takes a few seconds (the README's
Quick start, run once by the generated ../conftest.py, is shrunk by the same flags).

Every shrunk width is 3 and every shrunk training set has 6 points, so each jitted sampler
compiles once per session (JAX compilation dominates the suite's time).
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from bnn_renorm.config import PRESETS

# Flags that shrink any preset to the tiny size used by the tests: the [readme.shrink] of
# tests/skeleton.toml, which the generated ../conftest.py also adds to the README commands.
SKELETON = tomllib.loads((Path(__file__).parent / "skeleton.toml").read_text())
SHRINK = {
    name: tuple(v) if isinstance(v, list) else v for name, v in SKELETON["readme"]["shrink"].items()
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
