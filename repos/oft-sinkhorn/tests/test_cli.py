"""The command line beyond tests/test_skeleton.py (which also runs the misuse cases of skeleton.toml
and the README's Quick start commands): a missing GPU, DIMACS input errors, the README's Python
snippet."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import torch

from oft_sinkhorn.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_missing_instance_file_exits_2_naming_it(capsys, tmp_path, monkeypatch):
    # not in skeleton.toml: the generated check found runs/quick/config.json written first
    monkeypatch.chdir(tmp_path)  # a failed `train` may already have written runs/quick/config.json
    assert main(["train", "--instance", "missing.min"]) == 2
    assert "missing.min" in capsys.readouterr().err


def test_missing_gpu_is_a_clear_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--preset", "full", "--device", "cuda"]) == 2
    assert "--device cuda: this machine has no CUDA device" in capsys.readouterr().err


def test_malformed_dimacs_exits_2_naming_the_line(tmp_path, capsys):
    (tmp_path / "bad.min").write_text("p min 2 1\nn 1 1\nn 2 -1\na 1 2 0 five 1\n")
    assert (
        main(["train", "--instance", str(tmp_path / "bad.min"), "--out", str(tmp_path / "run")])
        == 2
    )
    assert "bad.min:4:" in capsys.readouterr().err


def test_readme_python_snippet_converges_without_warnings(capsys):
    """The README's Python block runs as printed, every stage reaches tol, nothing is warned."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(code, "README.md", "exec"), {})  # noqa: S102 -- the README is ours
    assert capsys.readouterr().out.startswith("True ")
