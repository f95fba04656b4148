"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mcl_nf.bench import compute_claims, run_bench
from mcl_nf.data import write_skimage_photos
from mcl_nf.results import verdict
from mcl_nf.stats import paired_interval

CLAIM_IDS = ("step1-beats-best-cl", "meta-init-beats-random-init", "step2-best-of-all")
CONTROL_IDS = ("step1-beats-best-cl", "step2-best-of-all")


def test_bench_writes_schema_claims_and_figure(tiny):
    doc = run_bench(tiny)
    assert json.loads((Path(tiny.results_dir) / "quick.json").read_text()) == doc
    assert len(doc["metrics"]) == 9
    ids = set(CLAIM_IDS)
    assert {c["id"] for c in doc["claims"]} == ids | {f"audio-{i}" for i in ids} | {
        f"control-{pre}{i}" for pre in ("", "audio-") for i in CONTROL_IDS
    }
    assert "audio_psnr_step2" in doc["metrics"]["MCL-NF"]
    assert "ssim_final" in doc["metrics"]["OL"] and "audio_ssim_final" not in doc["metrics"]["OL"]
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
    ids = {f"nerf-{i}" for i in CLAIM_IDS} | {f"control-nerf-{i}" for i in CONTROL_IDS}
    assert {c["id"] for c in doc["claims"]} == ids
    assert (
        "nerf_psnr_step2" in doc["metrics"]["OL"] and "nerf_ssim_final" not in doc["metrics"]["OL"]
    )
    assert doc["metrics"]["MCL-NF"]["nerf_forgetting_q1_db"]["values"] == [0.0]


def rows(values: dict) -> dict:
    return {k: {"values": v, "mean": sum(v) / len(v)} for k, v in values.items()}


def hand_metrics() -> dict:
    """Hand-made metrics over 3 seeds where MCL-NF clears every rule by a wide margin."""
    base = {"psnr_step1": [19.0, 19.2, 18.9], "psnr_step8": [30.0, 30.5, 29.8]}
    metrics = {m: rows(base) for m in ("Naive", "EWC", "ER", "MOL", "OL")}
    metrics["Modules-random"] = rows(
        {"psnr_step1": [17.0, 17.1, 17.3], "psnr_step8": [28.0, 28.3, 27.9]}
    )
    metrics["MCL-NF"] = rows({"psnr_step1": [25.0, 24.6, 25.3], "psnr_step8": [33.0, 33.4, 32.9]})
    return metrics


def test_claims_are_structured_paired_and_their_negative_controls_do_not_hold():
    """MCL-NF clears every rule (each part's interval above its threshold on 3 seeds); the
    negative controls (random-init modules) are contradicted; one seed where OL wins at the end
    makes the end claim inconclusive, and OL winning on every seed contradicts it."""
    metrics = hand_metrics()
    claims = {c["id"]: c for c in compute_claims(metrics, 8)}
    for cid in ("step1-beats-best-cl", "meta-init-beats-random-init", "step8-best-of-all"):
        c = claims[cid]
        assert c["verdict"] == "holds" and c["holds"] and verdict(c["test"]) == "holds"
        assert all(p["n"] == 3 and p["direction"] == ">" for p in c["test"])
    step1 = claims["step1-beats-best-cl"]["test"]
    assert [p["threshold"] for p in step1] == [3.0, 0.0, 0.0]
    assert step1[0]["estimate"] == pytest.approx((6.0 + 5.4 + 6.4) / 3)
    assert claims["meta-init-beats-random-init"]["test"][0]["estimate"] == pytest.approx(
        (8.0 + 7.5 + 8.0) / 3
    )
    assert len(claims["step8-best-of-all"]["test"]) == 5
    for cid in ("control-step1-beats-best-cl", "control-step8-best-of-all"):
        assert (
            claims[cid]["verdict"] == "contradicted"
            and "NEGATIVE CONTROL" in claims[cid]["statement"]
            and claims[cid]["role"] == "control"
        )
    assert all(
        claims[cid].get("role", "claim") == "claim"
        for cid in ("step1-beats-best-cl", "step8-best-of-all")
    )
    metrics["OL"] = rows({"psnr_step1": [19.0, 19.2, 18.9], "psnr_step8": [33.5, 30.0, 30.0]})
    assert {c["id"]: c for c in compute_claims(metrics, 8)}["step8-best-of-all"][
        "verdict"
    ] == "inconclusive"
    metrics["OL"] = rows({"psnr_step1": [19.0, 19.2, 18.9], "psnr_step8": [34.0, 34.5, 33.9]})
    assert {c["id"]: c for c in compute_claims(metrics, 8)}["step8-best-of-all"][
        "verdict"
    ] == "contradicted"


def test_step1_claim_is_gated_on_the_best_cl_baseline_and_on_mol():
    """The step-1 rule compares with the best CL baseline of each seed (not the worst, not the
    mean) and with MOL: a strong ER alone, or a MOL level with MCL-NF, stops it holding."""
    metrics = hand_metrics()
    metrics["ER"] = rows({"psnr_step1": [23.0, 22.5, 23.4], "psnr_step8": [30.0, 30.5, 29.8]})
    c = {c["id"]: c for c in compute_claims(metrics, 8)}["step1-beats-best-cl"]
    assert c["verdict"] == "contradicted"
    assert c["test"][0]["estimate"] == pytest.approx((2.0 + 2.1 + 1.9) / 3)
    metrics = hand_metrics()
    metrics["MOL"] = rows({"psnr_step1": [25.1, 24.5, 25.4], "psnr_step8": [30.0, 30.5, 29.8]})
    c = {c["id"]: c for c in compute_claims(metrics, 8)}["step1-beats-best-cl"]
    assert c["verdict"] != "holds" and "vs MOL" in c["ours"]


def test_claims_never_hold_on_fewer_than_three_seeds():
    one = {
        m: {k: {"values": v["values"][:2]} for k, v in r.items()} for m, r in hand_metrics().items()
    }
    assert not any(c["holds"] for c in compute_claims(one, 8))
    assert all(c["verdict"] != "holds" for c in compute_claims(one, 8))
    single = {
        m: {k: {"values": v["values"][:1]} for k, v in r.items()} for m, r in hand_metrics().items()
    }
    assert all(c["verdict"] == "inconclusive" for c in compute_claims(single, 8))


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
