"""The benchmark's claims follow their thresholds; the bench writes the results schema."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from degem.bench import GRAPHS, _ablation_seeds, compute_claims, run_bench
from degem.config import PRESETS

METHODS = (
    "DeGEM",
    "DeGEM@val",
    "DeGEM@test",
    "DeGEM[untrained]",
    "DeGEM[official]",
    "GNNSafe",
    "Energy",
    "Oracle",
)
CLAIM_IDS = [
    "gnnsafe-drops-on-heterophily",
    "propagation-hurts-on-heterophily",
    "degem-stable-on-heterophily",
    "degem-beats-gnnsafe-heterophilic",
]


def fake_metrics(**per_method):
    """method -> {graph: [per-seed average AUROC]}; unnamed methods sit at chance everywhere."""
    out = {}
    for m in METHODS:
        vals = per_method.get(m, {})
        keys = ("avg_auroc", "structure_auroc", "feature_auroc", "label_auroc")
        out[m] = {
            f"{g}/{k}": {"values": vals.get(g, [50.0, 51.0, 49.0])} for g in GRAPHS for k in keys
        }
    return out


GOOD = {
    "DeGEM": {"homophilic": [95, 96, 94], "heterophilic": [93, 95, 94]},
    "GNNSafe": {"homophilic": [90, 91, 89], "heterophilic": [60, 62, 58]},
    "Energy": {"homophilic": [88, 89, 87], "heterophilic": [70, 71, 69]},
    "Oracle": {"homophilic": [99, 99, 99], "heterophilic": [98, 99, 98]},
}


def by_id(metrics):
    return {c["id"]: c for c in compute_claims(metrics)}


def test_claims_hold_on_the_papers_pattern_and_their_controls_fail():
    claims = by_id(fake_metrics(**GOOD))
    assert all(c["holds"] for c in claims.values())
    assert not any(c["negative_control"]["holds"] for c in claims.values())
    assert all(c["paper"] and "CI" in c["ours"] for c in claims.values())


def test_gnnsafe_drop_claim_fails_when_the_drop_is_small():
    m = {**GOOD, "GNNSafe": {"homophilic": [90, 91, 89], "heterophilic": [80, 82, 78]}}
    assert not by_id(fake_metrics(**m))["gnnsafe-drops-on-heterophily"]["holds"]


def test_propagation_claim_needs_the_interval_below_zero():
    m = {**GOOD, "Energy": {"homophilic": [88, 89, 87], "heterophilic": [50, 75, 61]}}
    # GNNSafe - Energy = +10, -13, -3: mean -2, but the interval straddles 0
    assert not by_id(fake_metrics(**m))["propagation-hurts-on-heterophily"]["holds"]


def test_stability_claim_needs_degem_above_chance():
    # At chance on both graphs DeGEM loses nothing, which must not count as stability.
    at_chance = {**GOOD, "DeGEM": {"homophilic": [50, 51, 49], "heterophilic": [51, 50, 52]}}
    claims = by_id(fake_metrics(**at_chance))
    assert not claims["degem-stable-on-heterophily"]["holds"]
    assert claims["gnnsafe-drops-on-heterophily"]["holds"]  # the other claims are unaffected
    just = {**GOOD, "DeGEM": {"homophilic": [60, 60, 60], "heterophilic": [58, 57, 56]}}
    assert by_id(fake_metrics(**just))["degem-stable-on-heterophily"]["holds"]


def test_margin_claim_needs_ten_points_and_a_positive_interval():
    near = {**GOOD, "DeGEM": {"homophilic": [95, 96, 94], "heterophilic": [68, 69, 70]}}
    assert not by_id(fake_metrics(**near))["degem-beats-gnnsafe-heterophilic"]["holds"]
    one_seed = {k: {g: v[:1] for g, v in d.items()} for k, d in GOOD.items()}
    metrics = fake_metrics(**one_seed)
    for m in metrics.values():
        for v in m.values():
            v["values"] = v["values"][:1]
    assert not by_id(metrics)["degem-beats-gnnsafe-heterophilic"]["holds"]  # no interval


def test_selection_rules_are_reported_beside_the_claim():
    m = {**GOOD, "DeGEM@test": GOOD["DeGEM"]}
    sel = by_id(fake_metrics(**m))["degem-beats-gnnsafe-heterophilic"]["by_selection"]
    assert sel["DeGEM@test"]["holds"] and not sel["DeGEM@val"]["holds"]


def test_degem_claims_are_repeated_on_the_official_head():
    beats, stable = "degem-beats-gnnsafe-heterophilic", "degem-stable-on-heterophily"
    good = by_id(fake_metrics(**{**GOOD, "DeGEM[official]": GOOD["DeGEM"]}))
    assert good[beats]["by_variant"]["DeGEM[official]"]["holds"]
    assert good[stable]["by_variant"]["DeGEM[official]"]["holds"]
    at_chance = by_id(fake_metrics(**GOOD))  # the official head at chance fails both
    assert not at_chance[beats]["by_variant"]["DeGEM[official]"]["holds"]
    assert not at_chance[stable]["by_variant"]["DeGEM[official]"]["holds"]
    per_shift = good["propagation-hurts-on-heterophily"]["reported"]["GNNSafe - Energy per shift"]
    assert set(per_shift["heterophilic"]) == {"structure", "feature", "label"}


def test_official_head_runs_on_every_seed_other_ablations_on_fewer():
    quick, paper = PRESETS["quick"], PRESETS["paper"]
    assert _ablation_seeds(quick, "official") == quick.seeds
    assert _ablation_seeds(quick, "rho=0") == quick.seeds[:1]
    assert _ablation_seeds(paper, "rho=0") == paper.seeds[:2]
    assert _ablation_seeds(paper, "official-512") == paper.seeds[:1]


@pytest.mark.slow
def test_bench_writes_schema(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    for key in ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics"):
        assert key in doc
    assert [c["id"] for c in doc["claims"]] == CLAIM_IDS and len(doc["performance"]) == 2
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    for row in doc["performance"]:
        assert {"id", "what", "unit", "higher_is_better", "ours_value"} <= set(row)
    for fig in ("auroc", "ablation", "selection", "mechanism"):
        assert (Path(tiny.results_dir) / "figures" / f"{fig}.png").exists(), fig
    assert "graph" in doc["metrics"] and "DeGEM[rho=0]" in doc["metrics"]


@pytest.mark.slow
def test_paper_preset_runs_at_tiny_size(tmp_path, monkeypatch):
    """The paper preset's own seeds-by-ablations plan, shrunk in size only: it writes paper.json
    (mode 'paper') and paper-*.png with the quick preset's claim ids."""
    from degem import config

    short = {**config.ABLATIONS["official-512"], "epochs": 2}  # keeps width 512
    monkeypatch.setitem(config.ABLATIONS, "official-512", short)
    shrink = {"n_nodes": 200, "feat_dim": 16, "hidden": 32, "energy_hidden": 16, "epochs": 3}
    cfg = dataclasses.replace(
        config.PRESETS["paper"],
        **shrink,
        seeds=(0, 1),
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        quiet=True,
    )
    doc = run_bench(cfg)
    res = tmp_path / "results"
    assert json.loads((res / "paper.json").read_text()) == doc and doc["mode"] == "paper"
    for fig in ("auroc", "ablation", "selection", "mechanism"):
        assert (res / "figures" / f"paper-{fig}.png").exists(), fig
    assert [c["id"] for c in doc["claims"]] == CLAIM_IDS
    assert len(doc["metrics"]["DeGEM[rho=0]"]["homophilic/avg_auroc"]["values"]) == 2
    assert len(doc["metrics"]["DeGEM[official-512]"]["homophilic/avg_auroc"]["values"]) == 1
    assert len(doc["metrics"]["DeGEM[official]"]["homophilic/avg_auroc"]["values"]) == 2
    assert config.PRESETS["paper"].epochs == 200 and len(config.PRESETS["paper"].seeds) == 5


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    """A real (tiny) bench with no --results-dir: runs/<preset>/<preset>.json and its figures,
    no results/ folder (the committed results are written only when asked for)."""
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(
        tiny, results_dir="", out="runs/quick", ablations=(), epochs=2, mcmc_steps=2
    )
    doc = run_bench(cfg)
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text()) == doc
    assert (tmp_path / "runs" / "quick" / "figures" / "auroc.png").exists()
    assert not (tmp_path / "results").exists()
    numerics = doc["environment"]["numerics"]  # the CPU code path the numbers came from
    assert numerics["ATEN_CPU_CAPABILITY"] == os.environ.get("ATEN_CPU_CAPABILITY")
