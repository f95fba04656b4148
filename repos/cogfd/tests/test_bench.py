"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from cogfd.bench import run_bench
from cogfd.claims import claims_from, interval


def test_bench_writes_schema(tiny):
    cfg = dataclasses.replace(tiny, methods=("original", "cogfd", "esd_x", "uce"))
    doc = run_bench(cfg)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    for key in ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics"):
        assert key in doc
    assert {c["id"] for c in doc["claims"]} == {
        "cogfd-forget-drop",
        "cogfd-retains-sub-concepts",
        "cogfd-best-erase-retain",
    }
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert (Path(tiny.results_dir) / "figures" / "quick_samples.png").exists()
    assert {p["peer"] for p in doc["performance"]} >= {"esd_x", "uce"}
    assert "cogfd_t900-1000" in doc["metrics"]  # the window ablation, reported only
    assert doc["tuning"]["methods"]["cogfd"]["chosen"] in tiny.lr_grid
    assert doc["tuning"]["methods"]["uce"]["field"] == "uce_lambda"


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    """The committed results/ is written only when asked for (--results-dir results)."""
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(
        tiny, results_dir="", methods=("original", "cogfd"), window_ablation=(), steps_ablation=()
    )
    run_bench(cfg)
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["mode"] == "quick"
    assert (tmp_path / "runs" / "quick" / "figures" / "quick_metrics.png").exists()
    assert not (tmp_path / "results").exists()


def _metrics(**per_method):
    keys = (
        "forget_drop",
        "forget_drop_held_out",
        "retain_drop_sub",
        "retain_drop_other",
        "erase_retain_ratio",
    )
    return {
        method: {k: {"values": list(v)} for k, v in zip(keys, values, strict=True)}
        for method, values in per_method.items()
    }


def test_claims_follow_the_thresholds_and_the_paired_interval():
    seeds = 6
    good = _metrics(
        cogfd=(
            [60] * seeds,
            [55] * seeds,
            [5] * seeds,
            [9] * seeds,
            [4.0, 4.1, 3.9, 4.2, 4.0, 4.1],
        ),
        esd_x=([70] * seeds, [20] * seeds, [40] * seeds, [5] * seeds, [1.0] * seeds),
        naive=([70] * seeds, [20] * seeds, [40] * seeds, [30] * seeds, [1.0] * seeds),
    )
    claims = claims_from(good)
    assert [c["holds"] for c in claims] == [True, True, True]
    assert claims[1]["negative_control"]["fails_as_expected"]  # naive loses "red"
    # equal means but one seed where CoGFD loses: the paired interval reaches 0 -> not held
    noisy = _metrics(
        cogfd=([60] * seeds, [45] * seeds, [5] * seeds, [11] * seeds, [9, 0.1, 0.1, 0.1, 0.1, 9]),
        esd_x=([70] * seeds, [20] * seeds, [40] * seeds, [5] * seeds, [1.0] * seeds),
    )
    assert [c["holds"] for c in claims_from(noisy)] == [False, False, False]


def test_bootstrap_interval_brackets_the_mean():
    mean, lo, hi = interval([1.0, 2.0, 3.0, 4.0])
    assert lo < mean == 2.5 < hi and interval([2.0] * 5)[1:] == (2.0, 2.0)
