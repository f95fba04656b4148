"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ddo.bench import (
    ESTIMATOR_ROW,
    LOOP_DROP,
    LOOP_TOL,
    _falls,
    _part,
    compute_claims,
    run_bench,
)
from ddo.config import PRESETS, validate
from ddo.results import gate, part, verdict

CLAIMS = {
    "h-transform-matches-target", "learned-h-transform-matches-target",
    "ddo-beats-diffusion-dpo", "short-run-ula-misweights", "objective-falls-over-da-loops",
    "l-estimator-resolves-learned-rows",
}  # fmt: skip


def test_bench_writes_schema_claims_controls_and_figures(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc and doc["tuning"]
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    for c in doc["claims"]:
        assert isinstance(c["holds"], bool) and c["paper"] and "interval" in c
        assert c["verdict"] in ("holds", "contradicted", "inconclusive") and c["test"]
        assert c["holds"] == (c["verdict"] == "holds")
        if "not_read" in c:  # its precondition does not hold: read as inconclusive
            assert c["verdict"] == "inconclusive" and "seeds_needed" not in c
            assert c["verdict_of_numbers"] == verdict(c["test"])
        else:
            assert c["verdict"] == verdict(c["test"])
        if "negative_control" in c:
            control = c["negative_control"]
            assert control["passes_check"] == (control["verdict"] == "holds")
    for row in doc["performance"]:
        assert row["unit"] == "s" and row["ours_value"] > 0
    tuning = doc["tuning"]["Diffusion-DPO ddpo_beta"]
    assert tuning["grid"] == [100.0, 1000.0] and tuning["chosen"] in tuning["grid"]
    assert doc["config"]["ddpo_beta"] == tuning["chosen"]
    assert len(tuning["validation_objective"]) == 2
    figures = {p.name for p in (Path(tiny.results_dir) / "figures").glob("*.png")}
    assert figures == {
        "samples.png",
        "hard_samples.png",
        "da_objective.png",
        "mode_tv.png",
        "tuning.png",
    }
    # claims recomputed from the written metrics agree with the written claims
    cfg = dataclasses.replace(tiny, ddpo_beta=tuning["chosen"],
                              fit_lr=doc["tuning"]["DDO fit_lr"]["chosen"])  # fmt: skip
    assert gate(compute_claims(doc["metrics"], cfg)) == doc["claims"]


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    """The committed results/ is written only when asked for (--results-dir results)."""
    monkeypatch.chdir(tmp_path)
    run_bench(dataclasses.replace(tiny, results_dir="", seeds=(0,), fit_lrs=(0.01,)))
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["mode"] == "quick"
    assert (tmp_path / "runs" / "quick" / "figures" / "samples.png").exists()
    assert not (tmp_path / "results").exists()


def _falls_verdict(curves):
    stats = _falls(curves)
    rise = stats["worst_rise"]
    return verdict([
        _part("drop", stats["drop"], LOOP_DROP, ">"),
        part("rise", rise, (rise, rise), LOOP_TOL, "<", len(curves)),
    ])  # fmt: skip


def test_falls_check_fails_on_flat_and_rising_curves():
    falling = [[0.69, 0.62, 0.61], [0.69, 0.63, 0.60], [0.69, 0.62, 0.60]]
    assert _falls_verdict(falling) == "holds"
    assert _falls_verdict([[0.69, 0.69, 0.69]] * 3) != "holds"  # no drop
    assert _falls_verdict([[0.69, 0.60, 0.65]] * 3) == "contradicted"  # a rise of 0.05
    assert _falls_verdict(falling[:2]) != "holds"  # two seeds: too few to hold
    assert _falls_verdict([[0.69, 0.60]]) == "inconclusive"  # one seed: no interval
    assert _falls([[0.7, 0.6, 0.5], [0.7, 0.5, 0.5]])["drop"]["mean"] == pytest.approx(0.2)


def test_paper_preset_is_valid_and_writes_paper_json_names():
    paper = validate(PRESETS["paper"])
    assert paper.name == "paper" and len(paper.seeds) >= 5 and paper.images
    assert len(paper.fit_lrs) == len(paper.ddpo_betas)  # equal tuning budget
    assert paper.learned_samples >= PRESETS["quick"].learned_samples


class _Metrics(dict):
    """Every method and metric the claims read: three seeds of `default` unless set."""

    def __init__(self, default=(0.01, 0.02, 0.03)):
        super().__init__()
        self.default = default

    def __missing__(self, method):
        values = self.default

        class Row(dict):
            def __missing__(self, key):
                return {"mean": sum(values) / len(values), "values": list(values)}

        self[method] = Row()
        return self[method]

    def set(self, method, key, values):
        self[method][key] = {"mean": sum(values) / len(values), "values": list(values)}


@pytest.mark.parametrize(
    ("ddo", "dpo", "expected"),
    [
        ((0.50, 0.51, 0.52), (0.60, 0.62, 0.61), "holds"),
        ((0.60, 0.62, 0.61), (0.50, 0.51, 0.52), "contradicted"),
        ((0.50, 0.62, 0.52), (0.60, 0.51, 0.61), "inconclusive"),
    ],
)
def test_comparison_claim_verdict_follows_the_paired_difference(ddo, dpo, expected):
    """Synthetic metrics: DDO's L below Diffusion-DPO's on every seed holds, above contradicts."""
    from ddo.bench import DDO_LEARNED, DPO

    metrics = _Metrics()
    metrics.set(DDO_LEARNED, "objective", ddo)
    metrics.set(DPO, "objective", dpo)
    claims = {c["id"]: c for c in compute_claims(metrics, PRESETS["quick"])}
    comparison = claims["ddo-beats-diffusion-dpo"]
    assert comparison["verdict"] == expected
    assert comparison["precondition"] == "l-estimator-resolves-learned-rows"
    if expected == "inconclusive":
        assert comparison["seeds_needed"] > 3
    # the estimator precondition: a bias of 0.02 against half of L(p_ref) - L(q_hat)
    metrics.set("Reference", "objective_exact", (0.72,) * 3)
    metrics.set("q_hat", "objective", (0.60,) * 3)
    metrics.set(ESTIMATOR_ROW, "estimator_bias", (0.15, 0.16, 0.17))
    claims = {c["id"]: c for c in compute_claims(metrics, PRESETS["quick"])}
    assert claims["l-estimator-resolves-learned-rows"]["verdict"] == "contradicted"
    metrics.set(ESTIMATOR_ROW, "estimator_bias", (0.01, 0.02, 0.015))
    claims = {c["id"]: c for c in compute_claims(metrics, PRESETS["quick"])}
    assert claims["l-estimator-resolves-learned-rows"]["verdict"] == "holds"


def test_image_claims_need_the_precondition_and_three_seeds():
    metrics = _Metrics()
    for key, values in {
        "ranking_accuracy": (0.80, 0.82, 0.79),
        "ranking_accuracy_random_labels": (0.50, 0.48, 0.53),
        "ranking_accuracy_pixels_potential": (0.55, 0.60, 0.52),
        "colour_distance_minus_reference": (-0.05, -0.06, -0.04),
    }.items():
        metrics.set("Images: DDO", key, values)
    paper3 = dataclasses.replace(PRESETS["paper"], seeds=(0, 1, 2))
    claims = {c["id"]: c for c in compute_claims(metrics, paper3)}
    rank, colour = claims["images-potential-ranks-preferences"], claims["images-colour-moves"]
    assert rank["verdict"] == "holds" and colour["verdict"] == "holds"
    assert rank["negative_control"]["verdict"] == "contradicted"
    assert colour["precondition"] == rank["id"]
    metrics.set("Images: DDO", "ranking_accuracy", (0.50, 0.52, 0.49))  # chance: no signal
    claims = {c["id"]: c for c in compute_claims(metrics, paper3)}
    assert claims["images-potential-ranks-preferences"]["verdict"] == "contradicted"
    one_seed = _Metrics(default=(0.01,))
    for key, value in {"ranking_accuracy": 0.9, "ranking_accuracy_low": 0.85,
                       "ranking_accuracy_high": 0.95}.items():  # fmt: skip
        one_seed.set("Images: DDO", key, (value,))
    one_cfg = dataclasses.replace(PRESETS["paper"], seeds=(0,))
    claims = {c["id"]: c for c in compute_claims(one_seed, one_cfg)}
    rank = claims["images-potential-ranks-preferences"]
    assert rank["verdict"] == "inconclusive" and rank["seeds_needed"] == 3  # one seed never holds
