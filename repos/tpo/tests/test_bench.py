"""The benchmark writes a results file in the meta-repo schema with computed claims."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from tpo.bench import run_bench
from tpo.config import METHODS, PRESETS
from tpo.stats import paired_bootstrap

from .conftest import TINY

CLAIM_IDS = (
    "tpo-accuracy-gt-dpo",
    "tpo-ood-accuracy-gt-dpo",
    "tpo-ranks-better-than-dpo",
    "asr-raises-accuracy",
    "asr-raises-sibling-margin",
)
CONTROL_ID = "control-shuffled-not-above-dpo-acc-id"
HEADROOM_ID = "sft-leaves-headroom"


def test_bench_writes_schema_under_runs_by_default(tiny, tmp_path, monkeypatch):
    """A real tiny bench with no results_dir, run from an empty folder: runs/quick/quick.json and
    its figure, and no results/ folder (the committed results are written only when asked)."""
    monkeypatch.chdir(tmp_path)
    doc = run_bench(dataclasses.replace(tiny, results_dir=""))
    where = tmp_path / "runs" / "quick"
    assert json.loads((where / "quick.json").read_text()) == doc
    assert not (tmp_path / "results").exists()
    assert len(doc["metrics"]) >= 2
    assert doc["claims"][0]["id"] == HEADROOM_ID  # the precondition comes first
    assert {c["id"] for c in doc["claims"]} == {HEADROOM_ID, *CLAIM_IDS, CONTROL_ID}
    for c in doc["claims"]:  # structured test, three-way verdict; one seed never holds
        assert c["verdict"] in ("holds", "contradicted", "inconclusive")
        assert c["test"][0]["n"] == 1 and c["verdict"] != "holds" and not c["holds"]
        assert c["test"][0]["interval"] == [None, None]
        if "not_read" in c:  # read under the headroom precondition, undecided on one seed
            assert c["precondition"] == HEADROOM_ID and "seeds_needed" not in c
        else:
            assert c["seeds_needed"] > 1
    for c in doc["claims"][1:-1]:
        assert c["control"]["method"] == "tpo_shuffled"
        assert c["pooled_items"]["lo"] <= c["pooled_items"]["diff"] <= c["pooled_items"]["hi"]
    assert (where / "figures" / "quick-metrics.png").exists()


def test_paper_preset_at_tiny_size_tunes_every_method_on_the_same_grid(tmp_path):
    """The paper preset's code path (beta grid on validation problems, all methods, 2 seeds)."""
    shrink = {**TINY, "seeds": (0, 1), "curve_every": 1}
    cfg = dataclasses.replace(
        PRESETS["paper"], out=str(tmp_path / "runs"), results_dir=str(tmp_path / "res"), **shrink
    )
    assert PRESETS["paper"].pref_steps >= 300 and PRESETS["paper"].n_eval >= 600
    assert len(PRESETS["paper"].seeds) >= 3 and len(PRESETS["paper"].beta_grid) >= 2
    doc = run_bench(cfg)
    ids = {c["id"] for c in doc["claims"]}
    assert doc["mode"] == "paper" and ids == {HEADROOM_ID, *CLAIM_IDS, CONTROL_ID}
    for c in doc["claims"]:  # two paired seeds: a t interval, but never a verdict of holds
        assert c["test"][0]["n"] == 2 and None not in c["test"][0]["interval"]
        assert c["verdict"] != "holds"
    tuning = doc["tuning"]
    assert set(tuning["chosen"]) == set(METHODS) - {"sft"}
    assert all(set(v) == {"0.1", "0.5"} for v in tuning["val_acc"].values())
    assert [step for step, _ in doc["val_curves"]["tpo"]["0.5"]] == [1, 2]
    assert (tmp_path / "res" / "paper.json").exists()
    assert (tmp_path / "res" / "figures" / "paper-metrics.png").exists()


def test_paired_interval_covers_a_known_difference_and_resamples_within_seeds():
    rng = np.random.default_rng(0)
    a = [rng.normal(0.3, 1.0, 400) for _ in range(3)]
    b = [x - 0.3 + rng.normal(0, 0.1, 400) for x in a]
    iv = paired_bootstrap(a, b, n_boot=500)
    assert iv["lo"] < 0.3 < iv["hi"] and iv["n"] == 1200
    same = paired_bootstrap(a, a, n_boot=100)
    assert same["diff"] == same["lo"] == same["hi"] == 0.0


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


def _per_seed(tpo, dpo, ctrl, plr=None):
    base = {"acc_id": dpo}
    return {
        "tpo": {"acc_id": tpo},
        "dpo": base,
        "tpo_shuffled": {"acc_id": ctrl},
        "tpo_plr": {"acc_id": plr if plr is not None else dpo},
    }


def _items(per_seed):
    return {m: {k: [np.full(5, x) for x in v] for k, v in d.items()} for m, d in per_seed.items()}


def test_claims_hold_only_when_the_seed_interval_clears_zero_and_the_control_is_contradicted():
    """Claim verdicts follow the paired per-seed t interval: a consistent gain over 3 seeds
    holds, a gain on one seed only is inconclusive with seeds_needed, a loss is contradicted;
    the control's claim is contradicted when the shuffled policy falls below DPO."""
    from tpo.bench import claims_from

    per_seed = _per_seed([0.72, 0.70, 0.74], [0.69, 0.68, 0.70], [0.60, 0.62, 0.61])
    claims = {c["id"]: c for c in claims_from(per_seed, _items(per_seed), 50)}
    main = claims["tpo-accuracy-gt-dpo"]
    assert main["verdict"] == "holds" and main["test"][0]["estimate"] == pytest.approx(0.03)
    assert main["test"][0]["threshold"] == 0.0 and main["test"][0]["direction"] == ">"
    assert claims["asr-raises-accuracy"]["verdict"] == "holds"  # tpo_plr == dpo here
    assert (
        claims[CONTROL_ID]["verdict"] == "contradicted" and claims[CONTROL_ID]["role"] == "control"
    )
    assert main["control"]["verdict"] == "contradicted"
    noisy = _per_seed([0.75, 0.66, 0.70], [0.69, 0.68, 0.70], [0.60, 0.62, 0.61])
    c = {x["id"]: x for x in claims_from(noisy, _items(noisy), 50)}["tpo-accuracy-gt-dpo"]
    assert c["verdict"] == "inconclusive" and c["seeds_needed"] > 3
    worse = _per_seed([0.60, 0.61, 0.62], [0.69, 0.68, 0.70], [0.60, 0.62, 0.61])
    c = {x["id"]: x for x in claims_from(worse, _items(worse), 50)}["tpo-accuracy-gt-dpo"]
    assert c["verdict"] == "contradicted" and not c["holds"]


def _with_sft(per_seed, sft):
    return {**per_seed, "sft": {"acc_id": sft}}


def test_headroom_precondition_is_contradicted_at_the_ceiling_and_holds_below_it():
    """The precondition reads SFT's accuracy against the 0.9 ceiling and DPO's and TPO's against
    chance (1/modulus), on t intervals over seeds: SFT at 0.99 (the 067ac25 quick run) is
    contradicted; SFT at 0.67 with both preference methods well above chance holds; a
    preference method at chance leaves it undecided or contradicted, never holding."""
    from tpo.bench import HEADROOM_CEILING, claims_from

    base = _per_seed([0.72, 0.70, 0.74], [0.69, 0.68, 0.70], [0.60, 0.62, 0.61])
    at_ceiling = _with_sft(base, [0.993, 0.990, 0.987])
    claims = claims_from(at_ceiling, _items(at_ceiling), 50, chance=0.2)
    head = claims[0]
    assert head["id"] == HEADROOM_ID and head["verdict"] == "contradicted" and not head["holds"]
    sft_part = head["test"][0]
    assert sft_part["threshold"] == HEADROOM_CEILING and sft_part["direction"] == "<"
    assert sft_part["estimate"] == pytest.approx(0.99) and sft_part["interval"][0] > 0.9
    assert [p["threshold"] for p in head["test"][1:]] == [0.2, 0.2]
    assert [p["direction"] for p in head["test"][1:]] == [">", ">"]
    assert {"tpo-accuracy-gt-dpo", "asr-raises-accuracy"} <= set(head["precondition_of"])
    by_id = {c["id"]: c for c in claims}
    assert by_id["tpo-accuracy-gt-dpo"]["precondition"] == HEADROOM_ID
    assert "precondition" not in by_id.get("tpo-ranks-better-than-dpo", {})

    room = _with_sft(base, [0.69, 0.64, 0.68])
    head = claims_from(room, _items(room), 50, chance=0.2)[0]
    assert head["verdict"] == "holds" and head["holds"]
    assert head["test"][1]["estimate"] == pytest.approx(0.69)  # DPO's mean accuracy

    collapsed = _with_sft(_per_seed([0.21, 0.18, 0.20], [0.69, 0.68, 0.70], [0.6] * 3), [0.67] * 3)
    head = claims_from(collapsed, _items(collapsed), 50, chance=0.2)[0]
    assert head["verdict"] != "holds"
    assert claims_from(room, _items(room), 50)[0]["id"] != HEADROOM_ID  # no chance: no claim
