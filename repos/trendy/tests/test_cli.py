"""The command line: project-specific misuse exits 2 with a clear message (the generic cases are
in test_skeleton.py), the README quick start runs and bench writes runs/<preset>/, not results/."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import TINY

from trendy.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--dt", "0.2"], "dt=0.2 is unstable"),
        (["train", "--measurement", "wavelets"], "measurement must be one of"),
        (["train", "--val-fraction", "0.95"], "val_fraction must lie in (0, 0.9), got 0.95"),
        (["train", "--n-train", "3", "--val-fraction", "0.1"], "val_fraction=0.1 must leave"),
        (["train", "--n-frames", "7"], "euler_steps=40 must be a multiple of n_frames-1=6"),
        (["train", "--bands", "lizard"], "bands must name turing and/or hopf"),
        (["train", "--tune-sindy-components", "9"], "tune_sindy_components must lie in"),
        (["bench", "--data", "snaps.npz"], "bench simulates its own data"),
        (["train", "--preset"], "--preset needs a value"),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_readme_quick_start_commands_run_and_bench_leaves_results_alone(
    tmp_path, monkeypatch, capsys
):
    """Every `trendy ...` line of the README's Quick start, shrunk by extra flags, exits 0; the
    real (tiny) bench, run without --results-dir, writes runs/quick/quick.json and no results/."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^(?:\.venv/bin/)?(trendy .+)$", section, re.MULTILINE)
    commands = [shlex.split(c.split("#")[0]) for c in found]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    shrink = ["--seeds", "0", "--quiet"]
    for key, value in TINY.items():
        flag = "--" + key.replace("_", "-")
        shrink += [flag, *map(str, value)] if isinstance(value, tuple) else [flag, str(value)]
    for argv in commands:
        assert main(argv[1:] + shrink) == 0, argv
    assert any(argv[1] == "bench" for argv in commands)
    assert not (tmp_path / "results").exists()
    doc = json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())
    assert doc["paper"] == "trendy" and len(doc["metrics"]) >= 2
    assert all(isinstance(c["holds"], bool) for c in doc["claims"]) and doc["performance"]
    assert (tmp_path / "runs" / "quick" / "figures" / "quick_summary.png").exists()
    assert {"grid", "validation_nmse"} <= set(doc["tuning"])
    for c in doc["claims"]:  # structured parts and the three-way verdict on every claim
        assert c["test"] and c["verdict"] in ("holds", "contradicted", "inconclusive")
        assert c["holds"] == (c["verdict"] == "holds")
        assert c["verdict"] != "holds"  # one seed: a claim never holds on fewer than three
    roles = {c["id"]: c.get("role") for c in doc["claims"]}
    assert [k for k, r in roles.items() if r == "control"] == [
        "noise-control-untrained",
        "hopf-control-shuffled",
        "turing-control-shuffled",
    ]
