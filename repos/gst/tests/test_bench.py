"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gst.bench import GATES, POSE_MARGIN, PSNR_MARGIN, claims_from, run_bench


def test_bench_writes_schema(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    for key in (
        "paper",
        "mode",
        "created",
        "environment",
        "wall_seconds",
        "seeds",
        "metrics",
        "claims",
        "performance",
    ):
        assert key in doc
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
    assert len(doc["claims"]) == len(GATES)
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert all("control" in c for c in doc["claims"])
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
    """A gate holds only when the mean paired difference reaches the margin and the interval
    excludes 0; the untrained control is scored by the same gate."""
    metrics = {
        "gst": _m(rot_acc15=[50, 52, 51], psnr=[20.0, 20.1, 20.2]),
        "pose_only": _m(rot_acc15=[46, 47, 47.5]),  # +4.2 points, tight
        "nvs_only": _m(psnr=[19.9, 19.6, 20.3]),  # +0.17 dB < margin
        "untrained": _m(rot_acc15=[1, 0, 2], psnr=[12.0, 12.0, 12.0]),
    }
    out = {c["id"]: c for c in claims_from(metrics)}
    assert set(out) == {"joint-pose-beats-pose-only", "joint-nvs-beats-nvs-only"}
    assert out["joint-pose-beats-pose-only"]["holds"]
    assert not out["joint-nvs-beats-nvs-only"]["holds"]
    assert not out["joint-pose-beats-pose-only"]["control"]["holds"]
    noisy = {**metrics, "pose_only": _m(rot_acc15=[30, 60, 47])}  # mean +5.3, interval spans 0
    assert not {c["id"]: c for c in claims_from(noisy)}["joint-pose-beats-pose-only"]["holds"]
    assert POSE_MARGIN > 0 and PSNR_MARGIN > 0


def test_floor_gate_takes_the_better_floor_per_seed():
    metrics = {
        "nvs_only": _m(psnr=[16.0, 16.2, 16.1]),
        "mean_image": _m(psnr=[15.0, 15.1, 15.0]),
        "nearest_view": _m(psnr=[18.0, 18.5, 18.2]),
    }
    gate = {c["id"]: c for c in claims_from(metrics)}["ar-nvs-beats-floors"]
    assert gate["difference"]["values"] == pytest.approx([-2.0, -2.3, -2.1])
    assert not gate["holds"]
