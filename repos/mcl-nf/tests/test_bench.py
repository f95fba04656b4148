"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mcl_nf.bench import compute_claims, run_bench
from mcl_nf.data import write_skimage_photos
from mcl_nf.stats import paired_interval


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
    assert len(doc["metrics"]) == 9
    ids = {"step1-beats-best-cl", "meta-init-beats-random-init", "step2-best-of-all"}
    assert {c["id"] for c in doc["claims"]} == ids | {f"audio-{i}" for i in ids}
    assert "audio_psnr_step2" in doc["metrics"]["MCL-NF"]
    assert "ssim_final" in doc["metrics"]["OL"] and "audio_ssim_final" not in doc["metrics"]["OL"]
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert {p["id"] for p in doc["performance"]} == {"meta-step", "information-gain"}
    assert all(p["unit"] == "s" and p["ours_value"] > 0 for p in doc["performance"])
    assert {a["id"] for a in doc["ablations"]} == {
        f"{pre}fim-minus-mse-step{s}" for pre in ("", "audio_") for s in (1, 2)
    }
    assert (Path(tiny.results_dir) / "figures" / "psnr_and_forgetting.png").exists()


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(tiny, results_dir="", bench_signals=("audio",))
    run_bench(cfg)
    assert json.loads((tmp_path / "runs/quick/quick.json").read_text())["mode"] == "quick"
    assert (tmp_path / "runs/quick/figures/psnr_and_forgetting.png").exists()
    assert not (tmp_path / "results").exists()


def test_bench_computes_the_claims_for_the_nerf_family(tiny):
    doc = run_bench(dataclasses.replace(tiny, bench_signals=("nerf",)))
    ids = {"step1-beats-best-cl", "meta-init-beats-random-init", "step2-best-of-all"}
    assert {c["id"] for c in doc["claims"]} == {f"nerf-{i}" for i in ids}
    assert (
        "nerf_psnr_step2" in doc["metrics"]["OL"] and "nerf_ssim_final" not in doc["metrics"]["OL"]
    )
    assert doc["metrics"]["MCL-NF"]["nerf_forgetting_q1_db"]["values"] == [0.0]


def test_claims_are_paired_and_fail_on_their_negative_control():
    """Hand-made metrics over 3 seeds: MCL-NF clears every gate; the control (random-init
    modules) is reported as failing; one seed where OL wins at the end fails the end claim."""

    def rows(values):
        return {k: {"values": v, "mean": sum(v) / 3} for k, v in values.items()}

    base = {"psnr_step1": [19.0, 19.2, 18.9], "psnr_step8": [30.0, 30.5, 29.8]}
    metrics = {m: rows(base) for m in ("Naive", "EWC", "ER", "MOL", "OL")}
    metrics["Modules-random"] = rows(
        {"psnr_step1": [17.0, 17.1, 17.3], "psnr_step8": base["psnr_step8"]}
    )
    metrics["MCL-NF"] = rows({"psnr_step1": [25.0, 24.6, 25.3], "psnr_step8": [33.0, 33.4, 32.9]})
    claims = {c["id"]: c for c in compute_claims(metrics, 8)}
    assert all(c["holds"] for c in claims.values())
    assert "-> fails" in claims["step1-beats-best-cl"]["ours"]
    assert "-> fails" in claims["step8-best-of-all"]["ours"]
    metrics["OL"] = rows({"psnr_step1": base["psnr_step1"], "psnr_step8": [33.5, 30.0, 30.0]})
    assert not {c["id"]: c for c in compute_claims(metrics, 8)}["step8-best-of-all"]["holds"]


def test_paired_interval_matches_a_hand_computed_t_interval():
    iv = paired_interval([3.0, 4.0, 5.0], [1.0, 1.0, 1.0])
    assert iv["mean"] == 3.0 and iv["n"] == 3
    assert iv["hi"] - iv["mean"] == pytest.approx(4.302653 * 1.0 / 3**0.5, rel=1e-5)
    assert paired_interval([2.0], [1.0])["lo"] == 1.0


def test_paper_preset_bench_has_the_quick_claim_ids_and_its_own_figure(tiny, tmp_path):
    write_skimage_photos(tmp_path / "photos")
    paper = dataclasses.replace(
        tiny, name="paper", image_folder=str(tmp_path / "photos"), crop_side=16, test_images=3
    )
    doc = run_bench(paper)
    quick = run_bench(tiny)
    assert doc["mode"] == "paper" and quick["mode"] == "quick"
    assert [c["id"] for c in doc["claims"]] == [c["id"] for c in quick["claims"]]
    assert (Path(tiny.results_dir) / "figures" / "paper-psnr_and_forgetting.png").exists()
