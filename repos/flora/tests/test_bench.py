"""The benchmark writes a results file in the meta-repo schema with computed claims and figures."""

from __future__ import annotations

import json
from pathlib import Path

from flora.bench import params_to_tol, run_bench


def test_bench_writes_schema_claims_performance_and_figures(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
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
    assert {"FLoRA", "LoRA", "LoHa", "LoKr", "Full FT", "Linear probe", "BitFit"} <= set(
        doc["metrics"]
    )
    assert len(doc["claims"]) == 3 and all(
        isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"]
    )
    assert {p["id"] for p in doc["performance"]} == {
        "delta-w-reconstruction",
        "forward-vs-peft-lora",
        "forward-vs-merged",
    }
    assert all(p["ours_s"] > 0 and p["peer_s"] > 0 for p in doc["performance"])
    assert sorted(f.name for f in (Path(tiny.results_dir) / "figures").iterdir()) == [
        "structure.png",
        "transfer.png",
    ]


def test_params_to_tol_picks_the_fewest_parameters_that_recover():
    m = {
        "t_relerr_r1": {"mean": 0.5}, "t_params_r1": {"mean": 10.0},
        "t_relerr_r2": {"mean": 0.01}, "t_params_r2": {"mean": 20.0},
        "t_relerr_r3": {"mean": 0.0}, "t_params_r3": {"mean": 30.0},
    }  # fmt: skip
    assert params_to_tol(m, "t", (1, 2, 3), 0.05) == 20.0
    assert params_to_tol(m, "t", (1,), 0.05) == float("inf")
