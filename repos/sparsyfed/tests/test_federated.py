"""The round structure against the official client (LR schedule, when and what is pruned)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from sparsyfed.config import PRESETS
from sparsyfed.federated import client_round, lr_at, new_model, state_of
from sparsyfed.powerprop import sparsy_layers


def test_lr_schedule_matches_official_lrscheduler():
    """Official `LRScheduler(lr0, lr_f, T, warmup_rounds=0)(t)` = lr0 exp((t/T) log(lr_f/lr0))."""
    cfg = dataclasses.replace(PRESETS["quick"], lr0=0.5, lr_final=0.01, rounds=30)
    for t in (1, 2, 15, 30):
        official = 0.5 * math.exp((t / 30) * math.log(0.01 / 0.5))
        assert lr_at(cfg, t) == pytest.approx(official, rel=1e-12)
    assert lr_at(cfg, 1) < cfg.lr0  # round 1 already decays: no undecayed first round
    assert lr_at(cfg, cfg.rounds) == pytest.approx(cfg.lr_final)


@pytest.mark.parametrize("method", ["sparsyfed", "topk"])
def test_round_one_upload_is_pruned_in_omega_including_output_layer(tiny, method):
    """No dense warm-up: round 1's upload is already at s, as zeros of the stored omega, and
    global pruning covers every conv/linear layer (the official `get_parameters_to_prune`
    leaves `_first_layer=False`, so no layer, not even the output layer, is protected)."""
    cfg = dataclasses.replace(tiny, method=method, sparsity=0.9)
    model = new_model(cfg)
    names = [f"{n}.weight" for n, _ in sparsy_layers(model)]
    assert names[-1].startswith(list(dict(model.named_children()))[-1])  # output layer listed
    state, _ = client_round(cfg, model, state_of(model), client=0, server_round=1)
    zeros = sum(int((state[n] == 0).sum()) for n in names)
    total = sum(state[n].numel() for n in names)
    assert zeros == round(0.9 * total)


def test_flash_keeps_the_received_mask_and_topk_does_not(tiny):
    """FLASH masks the gradients with the received zeros: the upload has exactly the mask it
    got; Top-K regrows during local training and re-prunes, so its mask may move."""
    moved = {}
    for method in ("flash", "topk"):
        cfg = dataclasses.replace(tiny, method=method, sparsity=0.9, rounds=30)  # round 2 lr ~0.38
        model = new_model(cfg)
        names = [f"{n}.weight" for n, _ in sparsy_layers(model)]
        sparse, _ = client_round(cfg, model, state_of(model), client=0, server_round=1)
        after, _ = client_round(cfg, model, sparse, client=1, server_round=2)
        moved[method] = sum(int(((sparse[n] != 0) != (after[n] != 0)).sum()) for n in names)
    assert moved["flash"] == 0
    assert moved["topk"] > 0


def test_rounds_run_one_to_t_and_clients_report_their_sample_counts(tiny):
    """The loop trains rounds 1..T (Flower's 1-based round: no undecayed round 0, the last at
    lr_final) and evaluates after round T; each client reports its own sample count, the
    FedAvg weight."""
    from sparsyfed.federated import run_federated, split_of

    cfg = dataclasses.replace(tiny, rounds=3, eval_every=2)
    _, hist, _ = run_federated(cfg)
    assert hist["round"] == [1, 2, 3] and hist["eval_round"] == [2, 3]
    _, _, parts = split_of(cfg)
    model = new_model(cfg)
    sizes = {len(p) for p in parts}
    assert len(sizes) > 1  # LDA at alpha 0.1: the clients differ in size
    for client in (0, 1):
        _, n = client_round(cfg, model, state_of(model), client=client, server_round=1)
        assert n == len(parts[client])


def test_sparsyfed_never_revives_a_pruned_weight_and_topk_does(tiny):
    """Mask flips (zero in round t-1, non-zero in round t) are 0 for SparsyFed by construction
    (beta > 1: a zero omega has zero gradient) and positive for Top-K; counting the other
    direction (non-zero -> zero) would make SparsyFed's positive."""
    from sparsyfed.federated import run_federated

    flips = {}
    for method in ("sparsyfed", "topk"):
        cfg = dataclasses.replace(tiny, method=method, rounds=4, sparsity=0.9)
        _, hist, _ = run_federated(cfg)
        flips[method] = sum(hist["mask_regrowth"][1:])
        assert all(r >= 0 for r in hist["regrowth"])
    assert flips["sparsyfed"] == 0 and flips["topk"] > 0
