"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import json
from pathlib import Path

from tpo.bench import run_bench


def test_bench_writes_schema(tiny):
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
    assert len(doc["metrics"]) >= 2
    assert all(isinstance(c["holds"], bool) and c["paper"] for c in doc["claims"])
    assert {c["id"] for c in doc["claims"]} >= {"tpo-accuracy-ge-dpo", "asr-raises-sibling-margin"}
    assert (Path(tiny.results_dir) / "figures" / "quick_metrics.png").exists()


def test_plr_matches_trl_dpo_loss_on_a_model_batch():
    import torch

    from tpo.data import Tokenizer
    from tpo.perf import compare_with_trl, pair_batch
    from tpo.policy import build_policy

    tok = Tokenizer(5)
    torch.manual_seed(0)
    model = build_policy(len(tok.itos), 1, 16, 2)
    prompts = ["x 1 + 3 ?", "x 2 * 2 - 4 ?"]
    batch = pair_batch(
        tok,
        prompts,
        ["S 1 + 3 = 4 A 4", "S 2 * 2 = 4 S 4 - 4 = 0 A 0"],
        ["S 1 + 3 = 1 A 1", "S 2 * 2 = 3 S 3 - 4 = 4 A 4"],
    )
    res = compare_with_trl(model, tok, batch, beta=0.5, repeats=1)
    assert abs(res["ours_loss"] - res["peer_loss"]) <= 1e-5 * abs(res["peer_loss"])
    assert res["ours_s"] > 0 and res["peer_s"] > 0
