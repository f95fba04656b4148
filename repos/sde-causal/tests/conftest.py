"""Shared fixtures: the quick preset shrunk until a whole run takes seconds, and one tiny
benchmark run (paper preset, shrunk) shared by the benchmark tests."""

from __future__ import annotations

import dataclasses

import pytest

from sde_causal.config import PRESETS

TINY = {
    "n_paths": 16,
    "n_grid": (16,),
    "fine_steps": 60,
    "n_obs": 11,
    "n_perm": 19,
    "null_reps": 1,
    "power_reps": 1,
    "graphs_per_family": 1,
    "hidden_graphs": 1,
    "irregular_reps": 1,
    "tune_reps": 1,
    "ridge_grid": (0.01, 0.1),
    "kci_eps_grid": (1e-5, 1e-3),
    "incr_window_grid": (0.25, 0.5),
    "lags_grid": (1, 2),
    "workers": 1,
    "seeds": (0,),
    "pysiglib_sizes": (8,),
    "quiet": True,
}


@pytest.fixture
def tiny(tmp_path):
    return dataclasses.replace(
        PRESETS["quick"], out=str(tmp_path / "runs"), results_dir=str(tmp_path / "results"), **TINY
    )


@pytest.fixture(scope="session")
def paper_run(tmp_path_factory):
    """The paper preset shrunk by TINY, benchmarked once: (config, results document).

    Without the irregular and hidden-variable rows (the smoke test covers those) to keep the
    suite short."""
    from sde_causal.bench import run_bench

    root = tmp_path_factory.mktemp("paper")
    small = {**TINY, "irregular_reps": 0, "n_hidden": 0}
    cfg = dataclasses.replace(
        PRESETS["paper"], out=str(root / "runs"), results_dir=str(root / "results"), **small
    )
    return cfg, run_bench(cfg)
