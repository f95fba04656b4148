"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from gst.bench import CONTROL, GATES, POSE_MARGIN, claims_from, run_bench
from gst.results import verdict


def test_bench_writes_schema(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc and doc["performance"]
    assert set(doc["metrics"]) == {
        "tokenizer_ceiling",
        "chance_pose",
        "nearest_pose",
        "mean_image",
        "nearest_view",
        "untrained",
        "gst",
        "gst_gen",
        "nvs_only",
        "pose_only",
        "cnn_pose",
    }
    ids = [c["id"] for c in doc["claims"]]
    assert ids == [g.cid for g in GATES] + [f"control-{g.cid}" for g in GATES]
    for c in doc["claims"]:
        assert isinstance(c["holds"], bool) and c["paper"]
        numbers = c.get("verdict_of_numbers", c["verdict"])  # an unread claim keeps its own
        assert numbers == verdict(c["test"]) and c["holds"] == (c["verdict"] == "holds")
        assert c["verdict"] == ("inconclusive" if "not_read" in c else numbers)
    assert doc["steps_per_method"]["gst"] == 2 * doc["steps_per_method"]["gst_gen"]
    assert {p["id"] for p in doc["performance"]} == {"train-step", "sample-segment"}
    assert (Path(tiny.results_dir) / "figures" / "quick_metrics.png").exists()


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    """With no --results-dir the benchmark writes runs/<preset>/<preset>.json and its figure:
    the committed results/ is written only when asked for."""
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(tiny, results_dir="", methods=("pose_only",))
    doc = run_bench(cfg)
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text()) == doc
    assert (tmp_path / "runs" / "quick" / "figures" / "quick_metrics.png").exists()
    assert not (tmp_path / "results").exists()


def _m(**kw):
    return {k: {"mean": sum(v) / len(v), "std": 0.0, "values": list(v)} for k, v in kw.items()}


def test_claims_follow_the_paired_gates():
    """Three-way verdicts of the paired difference against the gate's threshold; the untrained
    control is scored by the same gate as a claim of its own."""
    metrics = {
        "gst": _m(rot_acc15=[50, 52, 51], psnr=[20.0, 20.1, 20.2]),
        "pose_only": _m(rot_acc15=[46, 47, 47.5]),  # +4.2 points, tight: holds
        "nvs_only": _m(psnr=[20.3, 20.4, 20.6]),  # -0.33 dB, tight: contradicted
        CONTROL: _m(rot_acc15=[1, 0, 2], psnr=[12.0, 12.0, 12.0]),
    }
    out = {c["id"]: c for c in claims_from(metrics)}
    assert set(out) == {
        "joint-pose-beats-pose-only",
        "joint-nvs-beats-nvs-only",
        "control-joint-pose-beats-pose-only",
        "control-joint-nvs-beats-nvs-only",
    }
    pose = out["joint-pose-beats-pose-only"]
    assert pose["verdict"] == "holds" and pose["holds"]
    assert pose["test"][0]["estimate"] == pytest.approx(4.1667, abs=1e-3)
    assert pose["test"][0]["n"] == 3 and pose["test"][0]["direction"] == ">"
    assert out["joint-nvs-beats-nvs-only"]["verdict"] == "contradicted"
    control = out["control-joint-pose-beats-pose-only"]
    assert control["verdict"] == "contradicted" and control["role"] == "control"
    noisy = {**metrics, "pose_only": _m(rot_acc15=[30, 60, 47])}  # mean +5.3, interval spans 0
    c = {c["id"]: c for c in claims_from(noisy)}["joint-pose-beats-pose-only"]
    assert c["verdict"] == "inconclusive" and c["seeds_needed"] > 3
    two = {
        k: {kk: {**vv, "values": vv["values"][:2]} for kk, vv in v.items()}
        for k, v in metrics.items()
    }
    assert not {c["id"]: c for c in claims_from(two)}["joint-pose-beats-pose-only"]["holds"]


def test_chance_gate_needs_the_margin():
    """ar-pose-beats-chance needs more than POSE_MARGIN points, not just a positive difference."""
    base = [1.0, 0.5, 0.8]
    small = {"pose_only": _m(rot_acc15=[b + 2.0 for b in base]), "chance_pose": _m(rot_acc15=base)}
    big = {"pose_only": _m(rot_acc15=[b + 9.0 for b in base]), "chance_pose": _m(rot_acc15=base)}
    get = lambda m: {c["id"]: c for c in claims_from(m)}["ar-pose-beats-chance"]
    assert POSE_MARGIN > 2.0 and get(small)["verdict"] == "contradicted"
    assert get(big)["verdict"] == "holds"


def test_perplexity_gate_compares_log_perplexity():
    """Lower perplexity holds (direction <); the gate is on the log (nats), the untrained control's
    near-uniform perplexity is contradicted."""
    metrics = {
        "gst_gen": _m(ppl_image=[4.0, 4.2, 3.9]),
        "nvs_only": _m(ppl_image=[5.0, 5.1, 4.8]),
        CONTROL: _m(ppl_image=[250.0, 251.0, 249.0]),
    }
    out = {c["id"]: c for c in claims_from(metrics)}
    c = out["gen-joint-image-ppl-below-nvs-only"]
    assert c["verdict"] == "holds"
    assert c["test"][0]["estimate"] == pytest.approx(
        (np.log([4.0, 4.2, 3.9]) - np.log([5.0, 5.1, 4.8])).mean()
    )
    assert out["control-gen-joint-image-ppl-below-nvs-only"]["verdict"] == "contradicted"
    swapped = {**metrics, "gst_gen": metrics["nvs_only"], "nvs_only": metrics["gst_gen"]}
    assert {c["id"]: c for c in claims_from(swapped)}[c["id"]]["verdict"] == "contradicted"


def test_floor_gate_takes_the_better_floor_per_seed():
    metrics = {
        "nvs_only": _m(psnr=[16.0, 16.2, 16.1]),
        "mean_image": _m(psnr=[15.0, 15.1, 15.0]),
        "nearest_view": _m(psnr=[18.0, 18.5, 18.2]),
    }
    gate = {c["id"]: c for c in claims_from(metrics)}["ar-nvs-beats-floors"]
    assert gate["difference"]["values"] == pytest.approx([-2.0, -2.3, -2.1])
    assert not gate["holds"]


def test_comparisons_are_read_only_where_the_models_learned():
    """The accuracy and PSNR comparisons carry their precondition gate (results.gate leaves
    them unread when it does not hold); perplexity comparisons and controls carry none."""
    from gst.results import gate

    metrics = {
        "gst": _m(rot_acc15=[50, 52, 51], psnr=[20.0, 20.1, 20.2]),
        "pose_only": _m(rot_acc15=[46, 47, 47.5]),
        "chance_pose": _m(rot_acc15=[1.0, 0.5, 0.8]),  # pose-only far above chance: read
        "nvs_only": _m(psnr=[19.0, 19.1, 19.2]),
        "mean_image": _m(psnr=[15.0, 15.1, 15.0]),
        "nearest_view": _m(psnr=[21.0, 21.5, 21.2]),  # NVS-only below the floor: unread
        "gst_gen": _m(ppl_image=[4.0, 4.2, 3.9]),
        CONTROL: _m(rot_acc15=[1, 0, 2], psnr=[12.0, 12.0, 12.0]),
    }
    metrics["nvs_only"]["ppl_image"] = _m(x=[5.0, 5.1, 4.8])["x"]
    raw = {c["id"]: c for c in claims_from(metrics)}
    assert raw["joint-pose-beats-pose-only"]["precondition"] == "ar-pose-beats-chance"
    assert raw["joint-nvs-beats-nvs-only"]["precondition"] == "ar-nvs-beats-floors"
    assert "precondition" not in raw["gen-joint-image-ppl-below-nvs-only"]
    assert not any("precondition" in c for c in raw.values() if c.get("role") == "control")
    read = {c["id"]: c for c in gate(list(raw.values()))}
    assert read["joint-pose-beats-pose-only"]["verdict"] == "holds"
    nvs = read["joint-nvs-beats-nvs-only"]
    assert nvs["verdict"] == "inconclusive" and nvs["verdict_of_numbers"] == "holds"
    assert nvs["not_read"] == "precondition ar-nvs-beats-floors is contradicted"
    assert read["gen-joint-image-ppl-below-nvs-only"]["verdict"] == "holds"
    without_floors = {k: v for k, v in metrics.items() if k not in ("mean_image", "nearest_view")}
    assert "precondition" not in {c["id"]: c for c in claims_from(without_floors)}[nvs["id"]]
