"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ddo.bench import _falls, compute_claims, run_bench
from ddo.config import PRESETS, validate

CLAIMS = {
    "h-transform-matches-target", "learned-h-transform-matches-target",
    "ddo-beats-diffusion-dpo", "short-run-ula-misweights", "objective-falls-over-da-loops",
}  # fmt: skip


def test_bench_writes_schema_claims_controls_and_figures(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    for key in ("paper", "mode", "created", "environment", "wall_seconds", "seeds", "metrics",
                "claims", "tuning"):  # fmt: skip
        assert key in doc
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    for c in doc["claims"]:
        assert isinstance(c["holds"], bool) and c["paper"] and "interval" in c
        assert isinstance(c["negative_control"]["passes_check"], bool)
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
    assert compute_claims(doc["metrics"], cfg) == doc["claims"]


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    """The committed results/ is written only when asked for (--results-dir results)."""
    monkeypatch.chdir(tmp_path)
    run_bench(dataclasses.replace(tiny, results_dir="", seeds=(0,), fit_lrs=(0.01,)))
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text())["mode"] == "quick"
    assert (tmp_path / "runs" / "quick" / "figures" / "samples.png").exists()
    assert not (tmp_path / "results").exists()


def test_falls_check_fails_on_flat_and_rising_curves():
    assert _falls([[0.69, 0.62, 0.61], [0.69, 0.63, 0.60]])[0]
    assert not _falls([[0.69, 0.69, 0.69], [0.69, 0.69, 0.69]])[0]  # no drop
    assert not _falls([[0.69, 0.60, 0.65], [0.69, 0.60, 0.65]])[0]  # a rise of 0.05
    assert not _falls([[0.69, 0.60]])[0]  # one seed: no interval


def test_paper_preset_is_valid_and_writes_paper_json_names():
    paper = validate(PRESETS["paper"])
    assert paper.name == "paper" and len(paper.seeds) >= 5 and paper.images
    assert len(paper.fit_lrs) == len(paper.ddpo_betas)  # equal tuning budget
    assert paper.learned_samples >= PRESETS["quick"].learned_samples
