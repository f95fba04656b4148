"""The benchmark writes a results file in the meta-repo schema with computed claims, and each
claim's check fails on its negative control."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from arith_heuristics.bench import claims_from, per_seed, run_bench
from arith_heuristics.config import OPERATORS

CLAIM_IDS = [
    "faithful-sparse-neurons",
    "top-neurons-classified",
    "heuristic-knockout-targets-associated",
    "prompt-knockout-below-random",
    "checkpoint-overlap-rises",
]


def test_bench_writes_schema(tiny):
    cfg = dataclasses.replace(tiny, seeds=(0, 1, 2), n_boot=200)
    doc = run_bench(cfg)
    on_disk = json.loads((Path(cfg.results_dir) / "quick.json").read_text())
    assert on_disk["claims"] == json.loads(json.dumps(doc["claims"]))
    for key in ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics"):
        assert key in doc
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert [c["id"] for c in doc["claims"]] == CLAIM_IDS
    assert all("negative_control" in c and "interval" in c for c in doc["claims"])
    for c in doc["claims"]:
        assert c["verdict"] in ("holds", "contradicted", "inconclusive") and c["test"]
        assert all(p["n"] <= 3 and p["method"] == "paired t over seeds" for p in c["test"])
        assert c["negative_control"]["verdict"] in ("holds", "contradicted", "inconclusive")
    for row in ("RandomNeurons", "BottomNeurons", "UntrainedModel", "IndependentModel"):
        assert row in doc["metrics"], row
    perf = doc["performance"][0]
    assert perf["unit"] == "s" and perf["ours_value"] > 0 and perf["peer_value"] > 0
    assert (Path(cfg.results_dir) / "figures" / "quick_analysis.png").exists()


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
    for row in ("BottomNeurons", "UntrainedModel", "UntrainedBottomNeurons", "RandomMaps"):
        put(row, "classified_share", [lo] * 3)
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


def test_claims_follow_the_metrics_and_controls_fail(tiny):
    cfg = dataclasses.replace(tiny, n_boot=200)
    good = claims_from(_fake(cfg, True), cfg)
    assert all(c["holds"] for c in good), [c["id"] for c in good if not c["holds"]]
    assert not any(c["negative_control"]["holds"] for c in good)
    assert all(c["verdict"] == "holds" for c in good)
    bad = claims_from(_fake(cfg, False), cfg)
    assert not any(c["holds"] for c in bad), [c["id"] for c in bad if c["holds"]]
    # the method equal to its nulls: no claim holds, none of the controls holds either
    assert all(c["verdict"] != "holds" for c in bad)


def test_no_claim_holds_on_two_seeds(tiny):
    """Seeds are the units: two seeds of a clear effect leave every claim short of 'holds'
    (four operators per seed do not count as more units)."""
    cfg = dataclasses.replace(tiny, n_boot=200)
    two = claims_from(_fake(cfg, True, seeds=2), cfg)
    assert [c["verdict"] for c in two] == ["inconclusive"] * len(CLAIM_IDS)
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
    from conftest import TINY

    from arith_heuristics.config import PRESETS

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
