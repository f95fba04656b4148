"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from empp.bench import ARMS, LABELS, claims_from, paired, run_bench, tune_lr


def test_bench_writes_schema(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    arms = {LABELS[a] for arms in ARMS.values() for a in arms}
    assert set(doc["metrics"]) == arms | {LABELS["median"]}
    assert {p["id"] for p in doc["performance"]} == {"empp-overhead", "empp-vs-schnet"}
    assert (Path(tiny.results_dir) / "figures" / "arms.png").stat().st_size > 0
    assert doc["lr_tuning"]["grid"] == [tiny.lr]  # quick: one lr for every arm, recorded


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    """The committed results/ is written only when asked for (--results-dir results)."""
    monkeypatch.chdir(tmp_path)
    run_bench(dataclasses.replace(tiny, results_dir="", tasks=("qm9",)))
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["mode"] == "quick"
    assert (tmp_path / "runs" / "quick" / "figures" / "arms.png").exists()
    assert not (tmp_path / "results").exists()


def test_lr_tuning_picks_the_lowest_validation_mae(tiny):
    cfg = dataclasses.replace(tiny, n_val=3, lr_grid=(1e-2, 1e-4), aux_grid=(0.1,))
    tuned, first, record = tune_lr(cfg, "qm9", "schnet")
    assert record["grid"] == [1e-2, 1e-4] and len(record["val_mae"]) == 2
    best = min(range(2), key=lambda i: record["val_mae"][i])
    assert tuned.lr == record["chosen_lr"] == cfg.lr_grid[best]
    assert round(first["val_mae"], 5) == record["val_mae"][best]
    assert "aux_grid" not in record and tuned.aux_weight == cfg.aux_weight  # no auxiliary loss
    assert tune_lr(cfg, "md", "schnet")[2] is None  # no validation split on MD: untuned


def test_aux_weight_is_tuned_at_the_chosen_lr(tiny):
    cfg = dataclasses.replace(tiny, n_val=3, lr_grid=(1e-2,), aux_grid=(0.0, 1.0))
    tuned, first, record = tune_lr(cfg, "qm9", "denoise")
    assert record["aux_grid"] == [1.0, 0.0] and len(record["aux_val_mae"]) == 2
    assert record["aux_val_mae"][0] == record["val_mae"][0]
    best = min(range(2), key=lambda i: record["aux_val_mae"][i])
    assert tuned.aux_weight == record["chosen_aux_weight"] == record["aux_grid"][best]
    assert round(first["val_mae"], 5) == record["aux_val_mae"][best] and tuned.lr == 1e-2


def fake_metrics(empp_mae: float) -> dict:
    def s(v):
        return {"mean": v, "std": 0.01, "values": [v - 0.01, v, v + 0.01]}

    m = {
        LABELS[a]: {"qm9_mae": s(1.0), "md_force_mae": s(2.0), "qm9_params": s(1e4)} for a in LABELS
    }
    m[LABELS["empp"]] |= {
        "qm9_mae": s(empp_mae),
        "qm9_pos_error": s(0.5),
        "qm9_centroid_error": s(1.0),
    }
    m[LABELS["median"]] = {"qm9_mae": s(2.0), "md_mae": s(3.0)}
    return m


def test_quick_gate_threshold_is_computed(tiny):
    holds = {c["id"]: c["holds"] for c in claims_from(fake_metrics(1.04), tiny)}
    assert holds["empp-not-worse-than-supervised"] and holds["empp-head-reconstructs-position"]
    assert holds["empp-pretraining-not-worse"]
    holds = {c["id"]: c["holds"] for c in claims_from(fake_metrics(1.06), tiny)}
    assert not holds["empp-not-worse-than-supervised"]
    assert not holds["negative-control-median-passes-gate"]
    assert holds["backbone-beats-median-floor"] and holds["backbone-comparable-to-schnet"]
    wide = fake_metrics(1.0)
    wide[LABELS["median"]]["qm9_mae"] = {"mean": 1.3, "std": 0.0, "values": [1.29, 1.3, 1.31]}
    holds = {c["id"]: c["holds"] for c in claims_from(wide, tiny)}
    assert not holds["backbone-beats-median-floor"]  # 1.0 is not <= 0.7 x 1.3: no wide margin
    paper = dataclasses.replace(tiny, name="paper", tasks=("qm9",))
    ids = {c["id"] for c in claims_from(fake_metrics(0.9), paper)}
    assert "empp-forces-not-worse" not in ids and "empp-vs-denoising" in ids


def test_paired_interval():
    mean, lo, hi = paired([1.0, 2.0, 3.0], [0.5, 1.5, 2.0])
    assert mean == pytest.approx(2 / 3)
    assert lo < mean < hi and hi - lo == pytest.approx(2 * 4.303 * 0.2886751 / 3**0.5, rel=1e-3)
    assert paired([1.0], [0.0])[2] == float("inf")


def test_every_claim_is_structured_with_a_three_way_verdict(tiny):
    """Every claim carries its paired test; verdicts follow from the intervals and the
    thresholds of the statements (paper preset: strictly below the baseline)."""
    paper = dataclasses.replace(tiny, name="paper", tasks=("qm9", "md"))
    better = {c["id"]: c for c in claims_from(fake_metrics(0.9), paper)}
    assert all(
        c["test"] and c["verdict"] in {"holds", "contradicted", "inconclusive"}
        for c in better.values()
    )
    assert better["empp-not-worse-than-supervised"]["verdict"] == "holds"
    assert better["empp-vs-denoising"]["verdict"] == "holds"
    assert better["empp-not-worse-than-supervised"]["test"][0]["threshold"] == 0.0
    assert better["negative-control-median-passes-gate"]["verdict"] == "contradicted"
    assert better["empp-head-reconstructs-position"]["verdict"] == "holds"
    # 1.04 is within quick's 5% tolerance but not below supervised: contradicted in paper
    worse = {c["id"]: c for c in claims_from(fake_metrics(1.04), paper)}
    assert worse["empp-not-worse-than-supervised"]["verdict"] == "contradicted"
    quick = {c["id"]: c for c in claims_from(fake_metrics(1.04), tiny)}
    assert quick["empp-not-worse-than-supervised"]["test"][0]["threshold"] == pytest.approx(0.05)
    assert quick["empp-not-worse-than-supervised"]["verdict"] == "holds"
    noisy = fake_metrics(0.9)
    noisy[LABELS["empp"]]["qm9_mae"]["values"] = [0.5, 1.5, 0.7]
    c = {c["id"]: c for c in claims_from(noisy, paper)}["empp-not-worse-than-supervised"]
    assert c["verdict"] == "inconclusive" and c["seeds_needed"] > 3 and not c["holds"]


def test_no_claim_holds_on_fewer_than_three_seeds(tiny):
    two = fake_metrics(0.5)
    for arm in two.values():
        for s in arm.values():
            s["values"] = s["values"][:2]
    paper = dataclasses.replace(tiny, name="paper", tasks=("qm9",))
    assert not any(c["holds"] for c in claims_from(two, paper) if "NEGATIVE" not in c["statement"])
    assert all(c["test"][0]["n"] == 2 for c in claims_from(two, paper))
