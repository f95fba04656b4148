"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from mcl_nf.bench import run_bench


def test_bench_writes_schema_claims_and_figure(tiny):
    doc = run_bench(tiny)
    assert json.loads((Path(tiny.results_dir) / "quick.json").read_text()) == doc
    for key in (
        "paper",
        "mode",
        "created",
        "environment",
        "wall_seconds",
        "seeds",
        "metrics",
        "claims",
    ):
        assert key in doc
    assert len(doc["metrics"]) == 7
    ids = {"step1-beats-best-cl", "step2-beats-mol", "no-forgetting"}
    assert {c["id"] for c in doc["claims"]} == ids | {f"audio-{i}" for i in ids}
    assert "audio_psnr_step2" in doc["metrics"]["MCL-NF"]
    assert "ssim_final" in doc["metrics"]["OL"] and "audio_ssim_final" not in doc["metrics"]["OL"]
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert {p["id"] for p in doc["performance"]} == {
        "meta-step",
        "fisher-trace",
        "fisher-trace-layerwise",
    }
    assert (Path(tiny.results_dir) / "figures" / "psnr_and_forgetting.png").exists()


def test_bench_computes_the_claims_for_the_nerf_family(tiny):
    doc = run_bench(dataclasses.replace(tiny, bench_signals=("nerf",)))
    ids = {"step1-beats-best-cl", "step2-beats-mol", "no-forgetting"}
    assert {c["id"] for c in doc["claims"]} == {f"nerf-{i}" for i in ids}
    assert (
        "nerf_psnr_step2" in doc["metrics"]["OL"] and "nerf_ssim_final" not in doc["metrics"]["OL"]
    )
    assert doc["metrics"]["MCL-NF"]["nerf_forgetting_q1_db"]["values"] == [0.0]
