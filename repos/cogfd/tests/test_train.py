"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size,
and the bad inputs the issue names."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from cogfd.concept_graph import GraphSchemaError
from cogfd.config import PRESETS, validate
from cogfd.train import ERASED, RERUN_ONLY, evaluate_saved, train_and_evaluate
from conftest import TINY


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["erase_steps"] == 2
    assert (tmp_path / "run" / "base.safetensors").exists()
    assert "cogfd/forget_rate" in metrics and "uce/erase_retain_ratio" in metrics
    assert all(math.isfinite(v) for v in metrics.values())
    # eval reloads the saved base and edited models and reproduces every metric it can
    again = evaluate_saved(dataclasses.replace(PRESETS["quick"], quiet=True), tmp_path / "run")
    same = {k for k in metrics if k.split("/", 1)[1] not in RERUN_ONLY}
    assert same and same <= set(again)
    assert {k: again[k] for k in same} == pytest.approx({k: metrics[k] for k in same})
    (tmp_path / "run" / ERASED).write_bytes(b"\x00garbage")
    with pytest.raises(ValueError, match=ERASED):
        evaluate_saved(tiny, tmp_path / "run")


def test_same_seed_same_numbers_and_resume_reuses_the_base(tiny, tmp_path):
    a = train_and_evaluate(tiny, tmp_path / "a")
    b = train_and_evaluate(tiny, tmp_path / "b")
    drop = {k for k in a if "seconds" in k or "samples_per_second" in k}
    assert {k: v for k, v in a.items() if k not in drop} == {
        k: v for k, v in b.items() if k not in drop
    }
    c = train_and_evaluate(dataclasses.replace(tiny, resume=True), tmp_path / "a")
    assert c["cogfd/forget_rate"] == a["cogfd/forget_rate"]


def test_paper_preset_bench_runs_at_tiny_size(tmp_path):
    """The paper preset end to end (tuning, every method, ablations, swap), shrunk to seconds;
    its own settings (130 CoGFD steps, 8 seeds, the 60-step sweep) are checked as they are."""
    from cogfd.bench import run_bench

    paper = PRESETS["paper"]
    assert paper.erase_steps == 130 and len(paper.seeds) >= 6 and paper.steps_ablation == (60,)
    cfg = dataclasses.replace(
        paper,
        **{**TINY, "seeds": (0, 1)},
        widths=(8, 16),
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
    )
    doc = run_bench(cfg)
    assert doc["mode"] == "paper" and (tmp_path / "results" / "paper.json").exists()
    assert (tmp_path / "results" / "figures" / "paper_metrics.png").exists()
    assert {c["id"] for c in doc["claims"]} == {
        "cogfd-forget-drop",
        "cogfd-retains-sub-concepts",
        "cogfd-pareto-dominates",
    }
    assert all("negative_control" in c for c in doc["claims"])
    assert "cogfd_steps3" in doc["metrics"] and doc["stall_swap"]["runs"]


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    full = dataclasses.replace(
        PRESETS["full"],
        device="cpu",
        image_size=8,
        widths=(8, 16, 16),
        pretrain_steps=1,
        pretrain_batch=4,
        oracle_steps=1,
        erase_steps=1,
        eval_samples=1,
        ddim_steps=2,
        seeds=(0,),
        methods=("original", "cogfd"),
        n_train_images=1,
        quiet=True,
    )
    metrics = train_and_evaluate(full, tmp_path)
    assert all(math.isfinite(v) for v in metrics.values())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"t_start": 990, "t_end": 1001}, "t_end must lie in"),
        ({"t_start": 5, "t_end": 5}, "non-empty"),
        ({"methods": ("cogfd",)}, "must include 'original'"),
        ({"image_size": 7}, "divisible"),
    ],
)
def test_bad_config_is_a_clear_error(change, message):
    with pytest.raises(ValueError, match=message):
        validate(dataclasses.replace(PRESETS["quick"], **change))


def test_broken_graph_json_is_a_clear_error(tiny, tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"red circle": {"entailment": "red disk"}}))
    with pytest.raises(GraphSchemaError, match="list of strings"):
        train_and_evaluate(dataclasses.replace(tiny, graph_json=str(path)), tmp_path / "r")


def test_graph_json_in_official_shape_drives_the_sets(tiny, tmp_path):
    path = tmp_path / "g.json"
    graph = {
        "iteration_0": {
            "red circle": {
                "Conjunction": ["red", "circle"],
                "entailment": [],
                "equivalence": ["ruby circle"],
                "red": {},
                "circle": {},
            }
        }
    }
    path.write_text(json.dumps(graph))
    metrics = train_and_evaluate(dataclasses.replace(tiny, graph_json=str(path)), tmp_path / "r")
    assert math.isfinite(metrics["cogfd/forget_rate"])
