"""The benchmark writes a results file in the meta-repo schema with computed claims, and each
claim's check fails on its negative control."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from arith_heuristics.bench import claims_from, per_seed, run_bench
from arith_heuristics.config import OPERATORS, validate

CLAIM_IDS = [
    "faithful-sparse-neurons",
    "faithful-at-paper-budget",
    "top-neurons-classified",
    "untrained-top-neurons-classified",
    "untrained-top-neurons-classified-official-k",
    "heuristic-knockout-targets-associated",
    "prompt-knockout-below-random",
    "checkpoint-overlap-rises",
]


def test_bench_writes_schema(tiny):
    cfg = dataclasses.replace(tiny, seeds=(0, 1, 2), n_boot=200)
    doc = run_bench(cfg)
    on_disk = json.loads((Path(cfg.results_dir) / "quick.json").read_text())
    assert on_disk["claims"] == json.loads(json.dumps(doc["claims"]))
    assert [c["id"] for c in doc["claims"]] == CLAIM_IDS
    paper_claims = [c for c in doc["claims"] if c.get("role", "claim") == "claim"]
    assert all("negative_control" in c and "interval" in c for c in paper_claims)
    for c in doc["claims"]:
        assert c["verdict"] in ("holds", "contradicted", "inconclusive") and c["test"]
        assert all(p["n"] <= 3 and p["method"] == "paired t over seeds" for p in c["test"])
        if c.get("role") != "control":
            assert c["negative_control"]["verdict"] in ("holds", "contradicted", "inconclusive")
    for row in ("RandomNeurons", "BottomNeurons", "UntrainedModel", "IndependentModel"):
        assert row in doc["metrics"], row
    perf = doc["performance"][0]
    assert perf["unit"] == "s" and perf["ours_value"] > 0 and perf["peer_value"] > 0
    assert (Path(cfg.results_dir) / "figures" / "quick_analysis.png").exists()
    assert (Path(cfg.results_dir) / "figures" / "quick_faithfulness.png").exists()
    assert doc["protocol"]["grid"]["paper_frac"] == cfg.paper_frac


def _fake(cfg, good: bool, seeds: int = 3) -> dict:
    """Per-operator metrics over `seeds` seeds where the method beats every null (or does not)."""
    rows: dict[str, dict] = {}

    def put(row, key, values):
        for k, op in enumerate(OPERATORS):
            vals = [v + 0.01 * (k + s) for s, v in enumerate(values[:seeds])]
            mean = sum(vals) / len(vals)
            rows.setdefault(row, {})[f"{key}_{op}"] = {"values": vals, "mean": mean}
            rows[row][key] = {"values": vals, "mean": mean}

    hi, lo = (0.9, 0.2) if good else (0.3, 0.3)
    n = len(cfg.faith_fracs)
    for i in range(n):
        put("BagOfHeuristics", f"faith_curve_{i}", [hi] * 3)
        put("BagOfHeuristics", f"faith_curve_all_heads_{i}", [hi] * 3)
        put("BagOfHeuristics", f"faith_curve_of_means_{i}", [hi] * 3)
        put("RandomNeurons", f"faith_curve_{i}", [lo] * 3)
    put("BagOfHeuristics", "classified_share", [hi] * 3)
    put("BagOfHeuristics", "classified_share_official", [hi] * 3)
    for row in ("BottomNeurons", "UntrainedModel", "UntrainedBottomNeurons", "RandomMaps"):
        put(row, "classified_share", [lo] * 3)
        put(row, "classified_share_official", [lo] * 3)
    put("BagOfHeuristics", "knockout_assoc_acc", [lo] * 3)
    put("BagOfHeuristics", "knockout_unassoc_acc", [hi] * 3)
    put("RandomNeurons", "knockout_assoc_acc", [hi] * 3)
    put("RandomNeurons", "knockout_unassoc_acc", [hi] * 3)
    for c in range(len(cfg.knockout_counts)):
        put("BagOfHeuristics", f"guided_acc_{c}", [lo] * 3)
        for row in ("RandomHeuristicNeurons", "RandomAnyNeurons", "ShuffledPrompts"):
            put(row, f"guided_acc_{c}", [hi] * 3)
    for i in range(4):
        put("BagOfHeuristics", f"overlap_ckpt_{i}", [(0.2 + 0.2 * i) if good else 0.1] * 3)
        put("IndependentModel", f"overlap_ckpt_{i}", [0.1] * 3)
        put("IndependentModel2", f"overlap_ckpt_{i}", [0.1] * 3)
    return rows


def _claims(cs: list[dict]) -> list[dict]:
    """The paper's claims (not the top-level negative controls, role 'control')."""
    return [c for c in cs if c.get("role", "claim") == "claim"]


def test_claims_follow_the_metrics_and_controls_fail(tiny):
    cfg = dataclasses.replace(tiny, n_boot=200)
    every = claims_from(_fake(cfg, True), cfg)
    good = _claims(every)
    assert all(c["holds"] for c in good), [c["id"] for c in good if not c["holds"]]
    assert not any(c["negative_control"]["holds"] for c in good)
    assert all(c["verdict"] == "holds" for c in good)
    controls = [c for c in every if c.get("role") == "control"]
    assert len(controls) == 2 and not any(c["holds"] for c in controls)
    bad = _claims(claims_from(_fake(cfg, False), cfg))
    assert not any(c["holds"] for c in bad), [c["id"] for c in bad if c["holds"]]
    # the method equal to its nulls: no claim holds, none of the controls holds either
    assert all(c["verdict"] != "holds" for c in bad)


def test_no_claim_holds_on_two_seeds(tiny):
    """Seeds are the units: two seeds of a clear effect leave every claim short of 'holds'
    (four operators per seed do not count as more units)."""
    cfg = dataclasses.replace(tiny, n_boot=200)
    two = _claims(claims_from(_fake(cfg, True, seeds=2), cfg))
    assert [c["verdict"] for c in two] == ["inconclusive"] * len(two) and len(two) == 6
    assert all(c["seeds_needed"] >= 3 for c in two)
    assert all(p["n"] == 2 for c in two for p in c["test"])


def test_per_seed_averages_operators_and_skips_missing_ones():
    nan = float("nan")
    metrics = {
        "Row": {
            f"m_{op}": {"values": v}
            for op, v in zip("+-*/", ([1.0, 2.0], [3.0, nan], [5.0, 6.0], [7.0, 8.0]))
        }
    }
    got = per_seed(metrics, "Row", "m")
    assert np.allclose(got, [(1 + 3 + 5 + 7) / 4, (2 + 6 + 8) / 3])
    assert np.isnan(per_seed(metrics, "Row", "other")).all()


def test_paper_preset_writes_paper_json_with_the_same_claims(tiny, tmp_path):
    """The paper preset at tiny size: results/paper.json in mode 'paper', paper-*.png figures,
    and the same claim ids as the quick preset."""
    from arith_heuristics.config import PRESETS
    from conftest import TINY

    keep = ("top_frac", "min_heuristic_neurons", "faith_fracs")
    shrink = {k: getattr(tiny, k) for k in TINY if k not in keep}
    cfg = dataclasses.replace(
        PRESETS["paper"],
        **shrink,
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "r"),
        n_boot=200,
    )
    doc = run_bench(cfg)
    on_disk = json.loads((tmp_path / "r" / "paper.json").read_text())
    assert on_disk["mode"] == "paper" and doc["mode"] == "paper"
    assert (tmp_path / "r" / "figures" / "paper-analysis.png").exists()
    assert [c["id"] for c in doc["claims"]] == CLAIM_IDS
    assert PRESETS["paper"].max_operand == 100 and PRESETS["paper"].top_frac < 0.02


def _set(rows: dict, row: str, key: str, per_seed_values: list[float]) -> None:
    """The same per-seed values for every operator of one metric."""
    for op in OPERATORS:
        rows.setdefault(row, {})[f"{key}_{op}"] = {"values": list(per_seed_values)}


def _by_id(claims: list[dict]) -> dict[str, dict]:
    return {c["id"]: c for c in claims}


def test_paper_budget_is_a_claim_with_its_own_verdict(tiny):
    """F at the paper's 1.5% budget is its own claim, decided by its t interval over seeds
    (contradicted when entirely below 0.8), while the 10% claim is read beside it."""
    cfg = dataclasses.replace(tiny, faith_fracs=(0.015, 0.1, 0.5), n_boot=200)
    rows = _fake(cfg, True)
    _set(rows, "BagOfHeuristics", "faith_curve_0", [0.66, 0.68, 0.70])  # 1.5%: below 0.8
    got = _by_id(claims_from(rows, cfg))
    budget, sparse = got["faithful-at-paper-budget"], got["faithful-sparse-neurons"]
    assert budget["test"][0]["what"].endswith("1.5% neurons")
    assert budget["test"][0]["estimate"] == pytest.approx(0.68)
    assert budget["test"][0]["interval"][1] < 0.8 and budget["verdict"] == "contradicted"
    assert sparse["verdict"] == "holds" and "10.0%" in sparse["test"][0]["what"]
    assert "at 10.0% kept" in budget["ours"]
    # the same mean with seeds that disagree: undecided, with a seed estimate
    _set(rows, "BagOfHeuristics", "faith_curve_0", [0.45, 0.9, 0.69])
    wide = _by_id(claims_from(rows, cfg))["faithful-at-paper-budget"]
    assert wide["verdict"] == "inconclusive" and wide["seeds_needed"] > 3
    # above 0.8 on every seed: holds
    _set(rows, "BagOfHeuristics", "faith_curve_0", [0.9, 0.91, 0.92])
    assert _by_id(claims_from(rows, cfg))["faithful-at-paper-budget"]["verdict"] == "holds"
    # a grid without the budget is refused before any work
    with pytest.raises(ValueError, match="must include paper_frac"):
        validate(dataclasses.replace(cfg, faith_fracs=(0.1, 0.5)))


def test_official_rule_carries_the_untrained_control(tiny):
    """Both rules are reported; a rule that also classifies most of the untrained model's top
    neurons fails its control (the control claim holds), whatever the trained share."""
    cfg = dataclasses.replace(tiny, n_boot=200)
    rows = _fake(cfg, True)
    _set(rows, "BagOfHeuristics", "classified_share_official", [0.99, 1.0, 0.995])
    _set(rows, "UntrainedModel", "classified_share_official", [0.86, 0.88, 0.87])
    got = _by_id(claims_from(rows, cfg))
    main = got["top-neurons-classified"]
    assert main["verdict"] == "holds"  # decided by Algorithm 1
    official = main["official_k_rule"]
    assert all(p["what"].endswith("(official k)") for p in official["test"])
    assert official["untrained_control"]["verdict"] == "holds"
    assert official["untrained_control"]["test"][0]["estimate"] == pytest.approx(0.87)
    ctrl = got["untrained-top-neurons-classified-official-k"]
    assert ctrl["role"] == "control" and ctrl["verdict"] == "holds"
    assert "Official k rule" in main["ours"] and "untrained top +0.870" in main["ours"]
    alg1 = got["untrained-top-neurons-classified"]
    assert alg1["role"] == "control" and alg1["verdict"] == "contradicted"  # untrained ~0.2
    # an untrained model the official k does not classify: its control is contradicted
    _set(rows, "UntrainedModel", "classified_share_official", [0.2, 0.22, 0.21])
    got = _by_id(claims_from(rows, cfg))
    assert got["untrained-top-neurons-classified-official-k"]["verdict"] == "contradicted"


def test_sizes_parse_and_configure():
    from arith_heuristics.config import PRESETS, at_size, parse_size

    assert parse_size("6x192") == (6, 192)
    for bad in ("6", "6x", "x64", "0x64", "6X192", "6x-1"):
        with pytest.raises(ValueError, match="LAYERSxWIDTH"):
            parse_size(bad)
    paper = PRESETS["paper"]
    big = at_size(paper, "6x192")
    assert (big.n_layer, big.d_model, big.d_mlp, big.first_heuristics_layer) == (6, 192, 768, 3)
    assert big.sizes == () and big.out.endswith("size-6x192") and big.steps == paper.steps
    sweep = PRESETS["paper-sizes"]
    assert sweep.sizes == ("2x64", "6x192") and paper.sizes == ()
    assert dataclasses.replace(sweep, name="paper", out=paper.out, sizes=()) == paper
    with pytest.raises(ValueError, match="divisible"):
        validate(dataclasses.replace(paper, sizes=("2x6",)))
    with pytest.raises(ValueError, match="each size once"):
        validate(dataclasses.replace(paper, sizes=("2x64", "2x64")))
    for preset in ("quick", "paper"):
        assert PRESETS[preset].paper_frac in PRESETS[preset].faith_fracs


def test_bench_reports_each_claim_per_size(tiny):
    """An extra model size is trained over the same seeds; every claim carries a reading per
    size and the faithfulness figure has a curve per size."""
    cfg = dataclasses.replace(tiny, sizes=("1x8",), n_boot=200)
    doc = run_bench(cfg)
    assert list(doc["sizes"]) == ["1x8"] and doc["sizes"]["1x8"]["d_mlp"] == 32
    assert doc["protocol"]["model_sizes"] == ["2x16", "1x8"]
    assert (Path(cfg.out) / "size-1x8" / "seed0" / "metrics.json").exists()
    for c in doc["claims"]:
        assert list(c["per_size"]) == ["2x16", "1x8"]
        assert c["per_size"]["2x16"]["verdict"] == c["verdict"]
        assert all(
            r["verdict"] in ("holds", "contradicted", "inconclusive")
            for r in c["per_size"].values()
        )
    assert (Path(cfg.results_dir) / "figures" / "quick_faithfulness.png").exists()
