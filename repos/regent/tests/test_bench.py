"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from regent.bench import compute_claims, regroup, run_bench
from regent.stats import paired_bootstrap
from regent.train import METHODS


def test_bench_writes_schema_under_runs_by_default(tiny, tmp_path, monkeypatch):
    """A real tiny bench with no results_dir, run from an empty folder: runs/quick/quick.json and
    its figures, and no results/ folder (the committed results are written only when asked)."""
    monkeypatch.chdir(tmp_path)
    doc = run_bench(dataclasses.replace(tiny, results_dir=""))
    where = tmp_path / "runs" / "quick"
    assert json.loads((where / "quick.json").read_text()) == doc
    assert not (tmp_path / "results").exists()
    assert set(METHODS) <= set(doc["metrics"])
    ids = [c["id"] for c in doc["claims"]]
    assert len(ids) == 6 and sum(i.startswith("control-") for i in ids) == 3
    for c in doc["claims"]:
        assert c["verdict"] in ("holds", "contradicted", "inconclusive") and c["paper"]
        assert c["holds"] == (c["verdict"] == "holds") and c["test"]
        # two seeds: nothing may hold, however many episodes are paired
        assert c["verdict"] != "holds" and all(p["n"] == 2 for p in c["test"])
        assert c["id"].startswith("control-") or c["control"].startswith("control-")
    assert any(p["id"].startswith("knn-dim") and p["peer_s"] > 0 for p in doc["performance"])
    for name in ("return_vs_demos", "context_ablation", "knn_by_dimension"):
        assert (where / "figures" / f"{name}.png").exists()
    iv = doc["paired_vs_rp"]["REGENT - R&P/grid/k2"]
    assert iv["lo"] <= iv["mean"] <= iv["hi"] and iv["n"] == 2 * tiny.eval_episodes
    assert iv["blocks"] == 2  # two seeds x one held-out task
    assert doc["metrics"]["p95 context over nn1"]["normaliser_ratio/point"]["mean"] > 1


def synthetic(tiny, curves: dict[str, list[float]], ablation: list[float], noise=0.05):
    """Per-episode returns around given means (60 paired episodes), and their summary metrics."""
    rng = np.random.default_rng(0)
    eps = {}
    for method, values in curves.items():
        for k, v in zip(tiny.demo_counts, values):
            eps[f"{method}/k{k}"] = v + noise * rng.standard_normal(60)
    for n, v in zip(tiny.ablation_sizes, ablation):
        eps[f"ablation/n{n}"] = v + noise * rng.standard_normal(60)
    return regroup([{k: float(v.mean()) for k, v in eps.items()}]), eps


def by_id(claims: list[dict]) -> dict[str, dict]:
    return {c["id"]: c for c in claims}


MAIN = ("regent-gt-rp-gt-mtbc", "regent-improves-with-demos", "context-ablation-saturates")
CONTROLS = (
    "control-untrained-gt-rp-gt-mtbc",
    "control-mtbc-improves-with-demos",
    "control-rp-context-ablation",
)


def test_claims_follow_the_metrics_and_their_controls(tiny):
    tiny = dataclasses.replace(tiny, seeds=(0, 1, 2))
    good = {
        "REGENT": [0.5, 0.7],
        "R&P": [0.4, 0.5],
        "MT-BC": [0.1, 0.1],
        "REGENT-untrained": [0.2, 0.3],
    }
    claims = by_id(compute_claims(tiny, *synthetic(tiny, good, [0.2, 0.6, 0.62])))
    assert [claims[c]["verdict"] for c in MAIN] == ["holds"] * 3
    assert all("fails as it must" in claims[c]["control"] for c in MAIN)
    assert [claims[c]["verdict"] for c in CONTROLS] == ["contradicted"] * 3
    assert all(p["n"] == 3 for c in claims.values() for p in c["test"])
    bad = {
        "REGENT": [0.5, 0.45],
        "R&P": [0.6, 0.5],
        "MT-BC": [0.1, 0.1],
        "REGENT-untrained": [0.2, 0.3],
    }
    claims = by_id(compute_claims(tiny, *synthetic(tiny, bad, [0.2, 0.3, 0.6])))
    # R&P above REGENT at k=2, a fall with demos, a rise that comes late: each one contradicted
    assert [claims[c]["verdict"] for c in MAIN] == ["contradicted"] * 3
    # the same good curves on two seeds only: inconclusive, with the seeds a decision needs
    two = dataclasses.replace(tiny, seeds=(0, 1))
    claims = by_id(compute_claims(two, *synthetic(two, good, [0.2, 0.6, 0.62])))
    assert claims[MAIN[0]]["verdict"] == "inconclusive" and claims[MAIN[0]]["seeds_needed"] == 3


def test_a_passing_control_voids_the_claim(tiny):
    """If an untrained transformer beats R&P just as well, the ordering is not REGENT's doing."""
    curves = {
        "REGENT": [0.5, 0.7],
        "R&P": [0.4, 0.5],
        "MT-BC": [0.1, 0.1],
        "REGENT-untrained": [0.5, 0.7],
    }
    tiny = dataclasses.replace(tiny, seeds=(0, 1, 2))
    claims = by_id(compute_claims(tiny, *synthetic(tiny, curves, [0.2, 0.6, 0.62])))
    assert claims[CONTROLS[0]]["verdict"] == "holds"
    assert "claim void" in claims[MAIN[0]]["control"]
    assert claims[MAIN[0]]["verdict"] == "inconclusive"  # REGENT - REGENT-untrained is 0


def test_noisy_equal_means_do_not_pass(tiny):
    """A 0.01 lead with a 0.1 spread (the first pass's 5-demo case) is not an ordering."""
    curves = {
        "REGENT": [0.51, 0.71],
        "R&P": [0.5, 0.7],
        "MT-BC": [0.1, 0.1],
        "REGENT-untrained": [0.2, 0.3],
    }
    tiny = dataclasses.replace(tiny, seeds=(0, 1, 2))
    first = compute_claims(tiny, *synthetic(tiny, curves, [0.2, 0.6, 0.62], noise=0.1))[0]
    assert first["verdict"] == "inconclusive" and first["seeds_needed"] > 3


def test_paired_interval_covers_the_mean_and_shrinks_with_pairs():
    rng = np.random.default_rng(1)
    small, large = (paired_bootstrap(0.1 + rng.standard_normal(n)) for n in (20, 2000))
    assert small["lo"] < small["mean"] < small["hi"]
    assert large["hi"] - large["lo"] < 0.3 * (small["hi"] - small["lo"])
    assert paired_bootstrap(np.zeros(6), 3) == {
        "mean": 0.0,
        "lo": 0.0,
        "hi": 0.0,
        "n": 6,
        "blocks": 2,
    }
    # blocks that differ widen the interval: resampling whole blocks keeps their spread
    blocky = np.repeat([0.0, 1.0], 50) + 0.01 * rng.standard_normal(100)
    assert paired_bootstrap(blocky, 50)["hi"] - paired_bootstrap(blocky, 50)["lo"] > 0.5
    assert paired_bootstrap(blocky)["hi"] - paired_bootstrap(blocky)["lo"] < 0.3
