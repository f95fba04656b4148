"""Shared fixtures: the quick preset shrunk until a benchmark takes a few seconds, and the README's
Quick start run with the example files it describes."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest
import torch

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


def generated_conftest(config: pytest.Config):
    """The project's generated ../conftest.py (its README helpers), as pytest loaded it."""
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    return next(
        plugin
        for plugin in config.pluginmanager.get_plugins()
        if getattr(plugin, "__file__", None) and Path(plugin.__file__).resolve() == path
    )


@pytest.fixture(scope="session")
def readme_run(pytestconfig, tmp_path_factory):
    """The generated `readme_run` (../conftest.py), with what it cannot do for this Quick start:
    its last two lines read the user's objectives.csv and import mymodule.py, which the README
    describes but does not ship (written here first), and those two lines take the shrink of
    skeleton.toml without --m (a user problem rejects --m). Same commands, same ReadmeRun."""
    from stch_set.cli import main

    generated = generated_conftest(pytestconfig)
    settings = generated.skeleton_settings().get("readme", {})
    own = settings.get("command_flags", {})
    folder = tmp_path_factory.mktemp("readme")
    rows = torch.rand(12, 4, generator=torch.Generator().manual_seed(0)).tolist()
    (folder / "objectives.csv").write_text("\n".join(",".join(map(str, r)) for r in rows))
    (folder / "mymodule.py").write_text(
        "import torch\ncentres = torch.randn(12, 4, generator=torch.Generator().manual_seed(0))\n"
        "def objectives(x):\n    return ((x[:, None, :] - centres) ** 2).sum(-1)\n"
    )
    commands = generated.readme_commands()
    codes = []
    cwd = os.getcwd()
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    try:
        for argv in commands:
            user = any(flag.startswith("--problem-") for flag in argv)
            shrink = {
                k: v for k, v in settings.get("shrink", {}).items() if not (user and k == "m")
            }
            codes.append(main(argv[1:] + list(own.get(argv[1], generated.as_flags(shrink)))))
    finally:
        os.chdir(cwd)
        sys.path.remove(str(folder))
        sys.modules.pop("mymodule", None)
    return generated.ReadmeRun(folder, commands, codes)
