"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from gst.bench import PSNR_MARGIN, claims_from, run_bench


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
        "tokenizer_floor",
        "chance_pose",
        "gst",
        "nvs_only",
        "pose_only",
        "cnn_pose",
    }
    assert len(doc["claims"]) == 2
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert {p["id"] for p in doc["performance"]} == {"train-step", "sample-segment"}
    assert (Path(tiny.results_dir) / "figures" / "quick_metrics.png").exists()


def _m(**kw):
    return {k: {"mean": v, "std": 0.0, "values": [v]} for k, v in kw.items()}


def test_claims_follow_the_thresholds():
    base = {"rot_acc15": 50.0, "rot_acc30": 70.0, "psnr": 20.0, "ssim": 0.5}
    metrics = {
        "gst": _m(**base),
        "pose_only": _m(**{**base, "rot_acc15": 46.9}),
        "nvs_only": _m(**{**base, "psnr": 20.0 - PSNR_MARGIN + 0.01}),
    }
    holds = {c["id"]: c["holds"] for c in claims_from(metrics)}
    assert holds == {"joint-pose-beats-pose-only": True, "joint-nvs-beats-nvs-only": False}
