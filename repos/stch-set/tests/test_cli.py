"""The command line's project-specific misuse (one clear line, exit 2) and the README quick start;
the generic contract (help, unknown commands, bounds, paths, corrupt runs) is test_skeleton.py."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest
import torch
from conftest import SHRINK, as_flags

from stch_set.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--steps", "0"], "steps must be >= 1"),
        (["train", "--mu", "0"], "mu must lie in (0, inf), got 0.0"),
        (["train", "--mu", "-0.1"], "mu must lie in (0, inf)"),
        (["train", "--mu", "inf"], "mu must lie in (0, inf)"),
        (["train", "--perf-k", "200"], "perf_k must lie in [1, 128] for every entry"),
        (["train", "--m", "4", "--k", "5"], "need 1 <= K <= m"),
        (["train", "--method", "mgda"], "unknown method 'mgda'"),
        (["train", "--problem", "zdt1"], "unknown problem 'zdt1'"),
        (["train", "--steps", "abc"], "Error parsing --steps"),
        (["train", "--init", "nope"], "invalid choice 'nope'"),
        (["train", "--problem", "deep", "--init", "official"], "exists for quadratic"),
        (["train", "--threads", "0"], "threads must be >= 1"),
        (["bench", "--workers", "0"], "workers must be >= 1"),
        (["bench", "--tune-lrs", "0.01", "-1"], "tune_lrs must lie in (0, inf) for every entry"),
        (["bench", "--seeds", "0", "-2"], "seeds must be >= 0 for every entry"),
        (["bench", "--tune-seeds", "0", "7"], "tune_seeds must be disjoint from seeds"),
        (["bench", "--methods", "som", "tch-set"], "--methods must include stch-set"),
        (["bench", "--compare-init-methods", "nsga3"], "gradient methods only"),
        (["train", "--problem-file", "a.csv", "--problem-entry", "m:f"], "not both"),
        (["train", "--problem-file", "missing.csv"], "problem file missing.csv does not exist"),
        (["train", "--problem-entry", "nope_module:f"], "'nope_module:f' cannot be imported"),
        (["train", "--problem-entry", "json:dumps", "--m", "3"], "--m does not apply"),
    ],
)
def test_misuse_exits_2_with_one_line_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and err.startswith("error: ")


def test_bad_csv_through_the_cli_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,3\n4,5\n")
    assert main(["train", "--problem-file", str(bad), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert f"problem file {bad}: data row 2 has 2 columns" in err and err.count("\n") == 1
    few = tmp_path / "few.csv"
    few.write_text("1,2,3\n4,5,6\n")
    assert main(["train", "--problem-file", str(few), "--out", str(tmp_path / "r")]) == 2
    assert "K=5 solutions for m=2 objectives" in capsys.readouterr().err


def test_user_problems_train_from_the_cli(tmp_path, monkeypatch, capsys):
    (tmp_path / "objs.py").write_text(
        "import torch\ncentres = torch.linspace(-2, 2, 12)[:, None] * torch.ones(1, 3)\n"
        "def f(x):\n    return ((x[:, None, :] - centres) ** 2).sum(-1)\n"
    )
    (tmp_path / "objs.csv").write_text("a1,a2,b\n" + "\n".join(f"1,{i},{i}" for i in range(8)))
    monkeypatch.syspath_prepend(str(tmp_path))
    for flags in (
        ["--problem-entry", "objs:f", "--n-dim", "3"],
        ["--problem-file", str(tmp_path / "objs.csv")],
    ):
        out = str(tmp_path / flags[1].replace("/", "_"))
        assert main(["train", *flags, "--k", "3", "--steps", "50", "--out", out]) == 0
        metrics = json.loads(capsys.readouterr().out)
        assert metrics["worst"] >= metrics["average"] >= 0


def test_train_into_a_read_only_folder_is_one_line(tmp_path, monkeypatch, capsys):
    """Was an OSError traceback (`train --out /ro/run`): the folder is checked before any work.
    The read-only folder is simulated, as root may write into any folder."""
    locked = tmp_path / "ro"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != locked and real_access(p, mode))
    assert main(["train", "--out", str(locked / "run")]) == 2
    err = capsys.readouterr().err
    assert f"--out {locked / 'run'}: {locked} is not writable" in err and err.count("\n") == 1
    assert not (locked / "run").exists()


def test_readme_quick_start_commands_run(tmp_path, monkeypatch, capsys):
    """Every `stch-set ...` line of the README's Quick start, shrunk by extra flags, exits 0
    (with the example objectives.csv and mymodule.py the README describes)."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^(stch-set .+)$", section, re.MULTILINE)]
    assert commands, "the README's Quick start names no command"
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    rows = torch.rand(12, 4, generator=torch.Generator().manual_seed(0)).tolist()
    (tmp_path / "objectives.csv").write_text("\n".join(",".join(map(str, r)) for r in rows))
    (tmp_path / "mymodule.py").write_text(
        "import torch\ncentres = torch.randn(12, 4, generator=torch.Generator().manual_seed(0))\n"
        "def objectives(x):\n    return ((x[:, None, :] - centres) ** 2).sum(-1)\n"
    )
    for argv in commands:
        user = any(flag.startswith("--problem-") for flag in argv)
        shrink = {k: v for k, v in SHRINK.items() if not (user and k == "m")}
        assert main(argv[1:] + as_flags(shrink) + ["--seeds", "0"]) == 0, argv
    assert json.loads((tmp_path / "runs/quick/quick.json").read_text())["paper"] == "stch-set"
    assert not (tmp_path / "results").exists()  # the committed results/ only on request
    assert (
        "user/worst"
        in json.loads((tmp_path / "runs/mine-bench/quick.json").read_text())["metrics"]["STCH-Set"]
    )
