"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from leq.bench import compare, gap_check, maze_claims, run_bench, schedule
from leq.config import PRESETS


@pytest.mark.slow  # shares the README run (about 85 s on a loaded machine)
def test_bench_writes_schema_claims_and_figures(readme_run):
    folder = readme_run[0]
    doc = json.loads((folder / "runs" / "quick" / "quick.json").read_text())
    for key in ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics"):
        assert key in doc
    assert {"LEQ", "IQL", "MB-onestep"} <= set(doc["metrics"])
    ids = {c["id"] for c in doc["claims"]}
    assert ids == {"leq-beats-onestep-mb", "leq-at-least-iql-minus-10"}
    for c in doc["claims"]:
        assert isinstance(c["holds"], bool) and c["paper"]
    vals = {m: doc["metrics"][m]["umaze_success_rate"]["values"] for m in ("LEQ", "MB-onestep", "IQL")}  # fmt: skip
    gap = next(c for c in doc["claims"] if c["id"] == "leq-beats-onestep-mb")
    vs_iql = next(c for c in doc["claims"] if c["id"] == "leq-at-least-iql-minus-10")
    for c, other, kind in ((gap, "MB-onestep", "beats"), (vs_iql, "IQL", "not-worse")):
        passes = gap_check(vals["LEQ"], vals[other], kind)[0]
        assert c["holds"] == (passes and not c["negative_control"]["holds"])
    for c in (gap, vs_iql):
        assert "model_holdout_err" in c["world_model"] and "paired_difference" in c
        assert c["negative_control"]["fails_as_expected"] == (not c["negative_control"]["holds"])
    assert "umaze_imagined_wall_frac_start" in doc["metrics"]["LEQ"]
    assert {p["id"] for p in doc["performance"]} == {"leq-updates-per-s", "iql-updates-per-s"}
    assert all(p["ours_updates_per_s"] > 0 for p in doc["performance"])
    assert (folder / "runs" / "quick" / "figures" / "scores.png").stat().st_size > 0


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    """The default results folder is runs/<preset>: a bench never touches the committed results/."""
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(tiny, results_dir="", methods=("LEQ",), out=str(tmp_path / "work"))
    doc = run_bench(cfg)
    written = json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())
    assert written["metrics"] == doc["metrics"] and "LEQ" in written["metrics"]
    assert (tmp_path / "runs" / "quick" / "figures" / "scores.png").stat().st_size > 0
    assert not (tmp_path / "results").exists()


def test_claim_with_no_signal_does_not_hold():
    """0 vs 0 passes 'LEQ >= IQL - 10' numerically but carries no information."""
    assert compare({"LEQ": 0.0, "IQL": 0.0}, True) == (
        False,
        "no signal: every compared method scores 0",
    )
    assert compare({"LEQ": 0.0, "MB-onestep": 0.0}, False)[0] is False
    assert compare({"LEQ": 40.0, "IQL": 0.0}, True) == (True, "")
    assert compare({"LEQ": 0.0, "IQL": 40.0}, False) == (False, "")


@pytest.mark.slow  # two benchmarks, one with 2 worker processes (about 50 s)
def test_two_worker_processes_give_the_serial_numbers(tiny, tmp_path):
    """The runs spread over 2 spawned workers give exactly the numbers of one process."""
    docs, runs = {}, {}
    for workers in (1, 2):
        cfg = dataclasses.replace(
            tiny,
            workers=workers,
            seeds=(0, 1),
            out=str(tmp_path / f"runs{workers}"),
            results_dir=str(tmp_path / f"results{workers}"),
        )
        docs[workers] = run_bench(cfg)
        runs[workers] = {
            p.relative_to(cfg.out): json.loads(p.read_text())
            for p in sorted(Path(cfg.out).rglob("metrics.json"))
        }
    assert docs[1]["metrics"] == docs[2]["metrics"]
    assert [c["holds"] for c in docs[1]["claims"]] == [c["holds"] for c in docs[2]["claims"]]
    assert len(runs[1]) == 6 and runs[1] == runs[2]  # every run's metrics, losses included


def test_schedule_runs_every_method_and_seed_once(tiny):
    cfg = dataclasses.replace(tiny, seeds=(0, 1, 2), dense_env="pendulum")
    jobs = schedule(cfg)
    assert jobs[0][0] == "perf"
    runs = [job[1:] for job in jobs[1:]]
    expected = [(cfg.env, m, s) for m in cfg.methods for s in cfg.seeds]
    expected += [("pendulum", m, s) for m in cfg.dense_methods for s in cfg.seeds]
    assert sorted(runs) == sorted(expected)


def test_claims_per_maze_of_the_paper_preset():
    """Each maze of a multi-maze preset gets its own gates (ids prefixed after the first maze);
    medium has no IQL gate (the paper's LEQ trails IQL on antmaze-medium-diverse)."""
    cfg = PRESETS["paper"]
    runs = {}
    for env in (cfg.env, *cfg.extra_envs):
        for s in cfg.seeds:
            runs[(env, "LEQ", s)] = {"bc_success_rate": 10.0, "model_holdout_err": 0.1}
    vals = {"LEQ": [90.0, 95.0, 92.0], "MB-onestep": [0.0, 0.0, 5.0], "IQL": [80.0, 90.0, 85.0]}
    umaze = maze_claims(cfg, runs, vals, "pm-umaze")
    medium = maze_claims(cfg, runs, vals, "pm-medium")
    assert [c["id"] for c in umaze] == ["leq-beats-onestep-mb", "leq-at-least-iql-minus-10"]
    assert [c["id"] for c in medium] == ["pm-medium-leq-beats-onestep-mb"]
    assert all(c["holds"] and c["negative_control"]["fails_as_expected"] for c in umaze + medium)
    assert "medium-diverse" in medium[0]["paper"]
    assert list(medium[0]["world_model"]) == ["model_holdout_err"]
