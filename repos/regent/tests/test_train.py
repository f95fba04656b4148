"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from regent.config import PRESETS
from regent.meta_world import HELD_OUT
from regent.report import report
from regent.train import METHODS, evaluate, train_and_evaluate


def test_smoke_writes_config_checkpoints_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["steps"] == tiny.steps
    assert (tmp_path / "run" / "point_REGENT.safetensors").exists()
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    for m in METHODS:
        assert f"{m}/k1" in metrics and f"{m}/grid/k2" in metrics


def test_eval_reloads_the_checkpoints_and_scores_them_again(tiny, tmp_path):
    """eval rebuilds nothing it can load: the saved REGENT and MT-BC checkpoints, scored on the
    run's held-out tasks, give train's numbers again; a damaged checkpoint is named."""
    cfg = dataclasses.replace(tiny, families=("grid",))
    run = tmp_path / "run"
    metrics = train_and_evaluate(cfg, run)
    again = evaluate(dataclasses.replace(PRESETS["quick"], out=str(run)), run)
    scored = [k for k in again if not k.startswith("env_steps_per_s/")]
    assert len(scored) > 10 and all(again[k] == metrics[k] for k in scored)
    assert {"REGENT/grid/k1", "MT-BC/k2", "ablation/n4"} <= set(scored)
    ckpt = run / "grid_MT-BC.safetensors"
    ckpt.write_bytes(ckpt.read_bytes()[:40])
    with pytest.raises(ValueError, match=f"^{ckpt}: corrupt checkpoint"):
        evaluate(cfg, run)
    ckpt.unlink()
    with pytest.raises(ValueError, match=f"^{ckpt}: no such checkpoint"):
        evaluate(cfg, run)


def test_same_seed_same_numbers(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, families=("point",))
    a, b = train_and_evaluate(cfg, tmp_path / "a"), train_and_evaluate(cfg, tmp_path / "b")
    measured = [k for k in a if not k.startswith("env_steps_per_s/")]  # speeds are wall-clock
    assert len(measured) > 10 and all(a[k] == b[k] for k in measured)
    other = train_and_evaluate(dataclasses.replace(cfg, seed=1), tmp_path / "c")
    assert any(a[k] != other[k] for k in measured)


def test_resume_reuses_checkpoints(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, families=("grid",))
    first = train_and_evaluate(cfg, tmp_path / "r")
    again = train_and_evaluate(dataclasses.replace(cfg, resume=True), tmp_path / "r")
    assert "pretrain_loss_last/REGENT/grid" not in again  # nothing was trained the second time
    assert again["REGENT/grid/k1"] == first["REGENT/grid/k1"]


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    from conftest import TINY

    full = dataclasses.replace(
        PRESETS["full"], device="cpu", **{**TINY, "d_model": 16, "n_heads": 8}
    )
    # Meta-World's path is exercised by the paper preset's test below
    full = dataclasses.replace(full, steps=1, demo_counts=(1,), ablation_demos=1, metaworld=False)
    assert math.isfinite(train_and_evaluate(full, tmp_path)["REGENT/k1"])


def test_paper_preset_runs_at_tiny_size(tmp_path):
    """PRESETS["paper"] end to end through the benchmark, shrunk: paper.json, paper-*.png."""
    from conftest import TINY
    from regent.bench import run_bench

    paper = dataclasses.replace(
        PRESETS["paper"],
        **TINY,
        seeds=(0,),
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        mw_rp_demo_counts=(2, 3),
    )
    doc = run_bench(paper)
    assert doc["mode"] == "paper" and (tmp_path / "results" / "paper.json").exists()
    assert doc["config"]["regime"] == "hard" and doc["config"]["eval_episodes"] == 2
    figures = sorted(p.name for p in (tmp_path / "results" / "figures").iterdir())
    assert figures and all(name.startswith("paper-") for name in figures)
    assert "paper-metaworld.png" in figures  # the paper preset runs Meta-World
    ids = [c["id"] for c in doc["claims"]]
    assert ids[-3:] == [
        "metaworld-regent-gt-rp-gt-mtbc",
        "control-metaworld-untrained-gt-rp",
        "metaworld-rp-row-matches-paper",
    ]
    assert set(doc["metaworld"]["rp_row"]["all"]) == {"k2", "k3", "paper, 100 demos"}
    assert set(doc["metaworld"]["tasks"]) == {*HELD_OUT, "all"}
    assert "seen tasks: REGENT/" in report(doc)


def test_paper_preset_is_the_larger_hard_setting():
    quick, paper = PRESETS["quick"], PRESETS["paper"]
    assert paper.regime == quick.regime == "hard" and paper.eval_episodes == 50
    assert paper.n_train_tasks > quick.n_train_tasks and paper.steps > quick.steps
    assert paper.demo_counts == quick.demo_counts and paper.seeds == quick.seeds
    assert paper.metaworld and not quick.metaworld


@pytest.mark.parametrize("family", ["point", "grid"])
def test_held_out_tasks_are_not_pretraining_tasks(family):
    """The held-out tasks are a separate draw: none of them is a pretraining task."""
    from regent.train import family_tasks

    cfg = dataclasses.replace(PRESETS["quick"], n_train_tasks=6, n_test_tasks=3)
    train, held_out = family_tasks(family, cfg)
    assert len(train) == 6 and len(held_out) == 3
    assert not set(train) & set(held_out)
