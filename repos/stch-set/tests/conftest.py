"""Shared fixtures: the quick preset shrunk until a benchmark takes a few seconds."""

from __future__ import annotations

import dataclasses

import pytest

from stch_set.config import PRESETS

SHRINK = {
    "m": 12,
    "k": 3,
    "n_dim": 4,
    "steps": 20,
    "nsga_pop": 8,
    "nsga_generations": 2,
    "perf_steps": 3,
    "official_steps": 2,
    "tune_steps": 10,
    "tune_lrs": (0.01, 0.03),
    "workers": 1,
    "target_steps": 20,
    "perf_m": (12, 24),
    "perf_k": (2, 3),
    "k_sweep": (2, 4),
    "m_sweep": (12,),
    "quiet": True,
}


def as_flags(overrides: dict) -> list[str]:
    """Config overrides as command-line flags (tyro: --field-name VALUE..., --flag for True)."""
    flags: list[str] = []
    for key, value in overrides.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            flags.append(flag)
        else:
            flags += [flag, *map(str, value if isinstance(value, tuple) else (value,))]
    return flags


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"],
        seeds=(0, 1),
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        **SHRINK,
    )
