"""tools/launch.py with submitit's local executor and a fake paper CLI: one job per seed, then
one merge over the partial files; a failing job stops that paper's merge."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

pytest.importorskip("submitit")

from launch import main

FAKE_CLI = """#!{python}
import json, sys
from pathlib import Path
args = sys.argv[2:]
def value(flag):
    return args[args.index(flag) + 1]
if "--partial-out" in args:
    seed = int(value("--seeds"))
    if seed == 13:
        sys.exit("seed 13 is unlucky")
    Path(value("--partial-out")).write_text(json.dumps({{"partial": True, "per_seed": {{str(seed): seed * seed}}}}))
else:
    i = args.index("--merge") + 1
    parts = []
    while i < len(args) and not args[i].startswith("--"):
        parts.append(args[i])
        i += 1
    per_seed = {{}}
    for p in parts:
        per_seed.update(json.loads(Path(p).read_text())["per_seed"])
    out = Path(value("--results-dir"))
    out.mkdir(parents=True, exist_ok=True)
    (out / (value("--preset") + ".json")).write_text(json.dumps({{"per_seed": per_seed, "sum": sum(per_seed.values())}}))
"""


@pytest.fixture
def fake(tmp_path):
    (tmp_path / "meta.toml").write_text(
        '[papers.fake]\npath = "repos/fake"\npackage = "fake"\ncli = "fake"\n'
    )
    (tmp_path / "repos" / "fake").mkdir(parents=True)
    cli = tmp_path / "envs" / "bench-fake" / "bin" / "fake"
    cli.parent.mkdir(parents=True)
    cli.write_text(FAKE_CLI.format(python=sys.executable))
    cli.chmod(cli.stat().st_mode | stat.S_IEXEC)
    return tmp_path


def run(root: Path, *extra: str) -> int:
    return main(
        ["--papers", "fake", "--preset", "quick", "--executor", "local", "--root", str(root),
         "--env-dir", str(root / "envs"), "--work-dir", str(root / "work"), *extra]
    )  # fmt: skip


def test_jobs_per_seed_then_one_merge(fake, capsys):
    assert run(fake, "--seeds", "1", "2", "3") == 0
    doc = json.loads((fake / "repos" / "fake" / "results" / "quick.json").read_text())
    assert doc == {"per_seed": {"1": 1, "2": 4, "3": 9}, "sum": 14}
    assert "fake: merged 3 seeds" in capsys.readouterr().out


def test_a_failed_job_means_no_merge(fake, capsys):
    assert run(fake, "--seeds", "1", "13") == 1
    out = capsys.readouterr().out
    assert "1 job(s) failed, no merge" in out and "seed 13 is unlucky" in out
    assert not (fake / "repos" / "fake" / "results" / "quick.json").exists()


def test_unknown_paper_and_missing_environment(fake, capsys):
    assert main(["--papers", "nope", "--root", str(fake)]) == 2
    with pytest.raises(SystemExit, match="does not exist"):
        main(["--papers", "fake", "--root", str(fake), "--env-dir", str(fake / "none"),
              "--work-dir", str(fake / "work")])  # fmt: skip


def test_results_dir_gets_one_folder_per_paper(fake, tmp_path):
    assert run(fake, "--seeds", "2", "--results-dir", str(tmp_path / "res")) == 0
    assert json.loads((tmp_path / "res" / "fake" / "quick.json").read_text())["sum"] == 4
