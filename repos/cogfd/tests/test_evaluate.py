"""The metrics' wiring: drops are measured against the original, held-out prompts never overlap
the erase set, tuning sees only the validation seed, the negative control drops the erase term."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from cogfd import concept_graph, data, evaluate, judge, train, tuning
from cogfd.config import PRESETS


def test_drops_are_original_minus_edited():
    orig = {
        "forget_rate": 80.0,
        "forget_rate_held_out": 70.0,
        "retain_acc": 90.0,
        "retain_acc_sub": 95.0,
        "retain_acc_other": 85.0,
        "forget_conf": 0.8,
        "retain_conf": 0.9,
    }
    edited = {
        "forget_rate": 20.0,
        "forget_rate_held_out": 30.0,
        "retain_acc": 85.0,
        "retain_acc_sub": 90.0,
        "retain_acc_other": 80.0,
        "forget_conf": 0.2,
        "retain_conf": 0.6,
    }
    rel = evaluate.relative_to_original(edited, orig)
    assert rel["forget_drop"] == pytest.approx(60.0)
    assert rel["forget_drop_held_out"] == pytest.approx(40.0)
    assert rel["retain_drop"] == rel["retain_drop_sub"] == rel["retain_drop_other"] == 5.0
    assert rel["erase_retain_ratio"] == pytest.approx(0.6 / 0.3)
    # an edit that leaves the retained concepts alone gets the floor, not a division by zero
    same = evaluate.relative_to_original({**edited, "retain_conf": 0.9}, orig)
    assert same["erase_retain_ratio"] == pytest.approx(0.6 / evaluate.RETAIN_FLOOR)


def test_held_out_prompts_are_synonyms_outside_the_erase_set():
    graph = concept_graph.build_graph("red circle", "t", 2, concept_graph.ontology_graph)
    erase, _ = concept_graph.extract_sets(graph)
    groups = evaluate.eval_prompts("red circle", erase)
    assert groups["forget"] == erase
    assert groups["held_out"] and not set(groups["held_out"]) & set(erase)
    target = data.expected_classes("red circle")
    assert all(data.expected_classes(p) == target for p in groups["held_out"])
    assert all(data.expected_classes(p) != target for p in groups["sub"] + groups["other"])


def test_tuning_sees_only_the_validation_seed(monkeypatch):
    seen: list[int] = []

    def fake_run(name, stage, cfg, seed, orig=None):
        seen.append(seed)
        score = 10.0 * cfg.erase_lr if name != "uce" else -cfg.uce_lambda
        return None, {"forget_drop": score, "retain_drop": 0.0}

    monkeypatch.setattr(tuning, "run_method", fake_run)
    cfg = dataclasses.replace(
        PRESETS["quick"], methods=("original", "cogfd", "cogfd_noerase", "esd_x", "uce")
    )
    overrides, record = tuning.tune(None, cfg)
    assert seen and set(seen) == {cfg.tune_seed} and cfg.tune_seed not in cfg.seeds
    assert overrides["cogfd"] == {"erase_lr": max(cfg.lr_grid)}  # the best validation score
    assert overrides["uce"] == {"uce_lambda": min(cfg.uce_lambda_grid)}
    assert overrides["cogfd_noerase"] == overrides["cogfd"] and record["seed"] == cfg.tune_seed


@pytest.mark.parametrize(("method", "weight"), [("cogfd", 0.1), ("cogfd_noerase", 0.0)])
def test_negative_control_runs_without_the_erase_term(method, weight, monkeypatch):
    calls: list[dict] = []

    def fake_erase(unet, text_encoder, images, erase, retain, **kw):
        calls.append({"erase": erase, "retain": retain, **kw})
        return unet, [1.1], [0.0]

    monkeypatch.setattr(train, "erase_cogfd", fake_erase)
    monkeypatch.setattr(train, "images_of", lambda stage, p, n, cfg, gen: torch.zeros(n, 3, 8, 8))
    stage = train.Stage(None, None, judge.Oracle(), {}, ["red circle"], ["red"], 0.0, [])
    cfg = PRESETS["quick"]
    train.erase_with(method, stage, cfg, torch.Generator())
    assert calls[0]["erase_weight"] == weight and calls[0]["steps"] == cfg.erase_steps
    assert calls[0]["erase"] == ["red circle"] and calls[0]["retain"] == ["red"]
