"""flora's own command-line behaviour (tests/test_skeleton.py covers help, unknown commands and
presets, paths and devices, the misuse cases of skeleton.toml and the README's Quick start)."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

from conftest import SHRINK
from flora.cli import main


def test_eval_of_a_run_with_a_wrong_weights_file_names_it(tiny, tmp_path, capsys):
    """A weights file from another method does not fit the rebuilt model: one line naming it."""
    from flora.train import train_and_evaluate

    args = ["--out", str(tmp_path / "run")]
    train_and_evaluate(dataclasses.replace(tiny, backbones=("cnn",)), tmp_path / "run")
    train_and_evaluate(
        dataclasses.replace(tiny, backbones=("cnn",), method="lora"), tmp_path / "lora"
    )
    (tmp_path / "lora" / "cnn_shift.safetensors").replace(
        tmp_path / "run" / "cnn_shift.safetensors"
    )
    assert main(["eval", *args]) == 2
    err = capsys.readouterr().err
    assert "cnn_shift.safetensors: does not fit" in err and err.count("\n") == 1


def test_readme_shrink_is_the_tiny_shrink():
    """skeleton.toml's [readme.shrink] (the README test's flags) is conftest's SHRINK, value for value."""
    settings = tomllib.loads((Path(__file__).parent / "skeleton.toml").read_text())
    as_lists = {k: list(v) if isinstance(v, tuple) else v for k, v in SHRINK.items()}
    assert settings["readme"]["shrink"] == as_lists
