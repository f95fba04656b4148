"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from tpo.config import PRESETS
from tpo.train import evaluate, train_and_evaluate

from .conftest import TINY


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["sft_steps"] == tiny.sft_steps
    assert (tmp_path / "run" / "sft.safetensors").exists()
    assert (tmp_path / "run" / "policy.safetensors").exists()
    assert metrics and all(math.isfinite(v) for v in metrics.values())


def test_eval_reloads_the_saved_policy_and_measures_it_again(tiny, tmp_path):
    """eval rebuilds the stage from config.json and sft.safetensors, loads policy.safetensors and
    gives train's numbers again; a damaged or missing checkpoint is named."""
    run = tmp_path / "run"
    metrics = train_and_evaluate(dataclasses.replace(tiny, pref_steps=6, pref_lr=1e-2), run)
    assert evaluate(dataclasses.replace(PRESETS["quick"], quiet=True), run) == metrics
    policy = run / "policy.safetensors"
    policy.write_bytes(policy.read_bytes()[:40])
    with pytest.raises(ValueError, match=f"^{policy}: corrupt checkpoint"):
        evaluate(tiny, run)
    (run / "sft.safetensors").unlink()
    with pytest.raises(ValueError, match="sft.safetensors: no such checkpoint"):
        evaluate(tiny, run)


def test_curve_every_records_validation_accuracy_without_changing_the_run(tiny, tmp_path):
    plain = train_and_evaluate(dataclasses.replace(tiny, pref_steps=4), tmp_path / "a")
    traced = train_and_evaluate(
        dataclasses.replace(tiny, pref_steps=4, curve_every=2), tmp_path / "b"
    )
    assert traced == plain
    curve = json.loads((tmp_path / "b" / "curve.json").read_text())["val_acc"]
    assert [step for step, _ in curve] == [2, 4] and all(0 <= acc <= 1 for _, acc in curve)


def test_same_seed_same_numbers(tiny, tmp_path):
    assert train_and_evaluate(tiny, tmp_path / "a") == train_and_evaluate(tiny, tmp_path / "b")


def test_large_preset_runs_one_step_at_tiny_size(tmp_path):
    small = {k: v for k, v in TINY.items() if k not in ("modulus", "n_layer", "d_model", "n_head")}
    full = dataclasses.replace(
        PRESETS["large"], device="cpu", **{**small, "sft_steps": 1, "pref_steps": 1}
    )
    metrics = train_and_evaluate(full, tmp_path)
    assert all(math.isfinite(v) for v in metrics.values())


def test_resume_reuses_the_sft_checkpoint(tiny, tmp_path):
    first = train_and_evaluate(tiny, tmp_path)
    again = train_and_evaluate(dataclasses.replace(tiny, resume=True, sft_steps=1), tmp_path)
    assert again == first  # sft_steps changed, but the saved SFT policy was reused


def test_heldout_trees_and_test_problems_do_not_leak_into_training(tiny, tmp_path):
    from tpo.hf import split_trees
    from tpo.train import prepare

    stage = prepare(tiny, tmp_path)
    train = {t.prompt for t in stage.train_trees}
    assert len(stage.train_trees) == tiny.n_trees
    assert len(stage.heldout_trees) == tiny.n_heldout_trees
    assert not train & {t.prompt for t in stage.heldout_trees}
    # test problems come from their own stream, not the SFT data's: with the quick preset's
    # generator a few percent coincide by chance (3-4% measured), a leak makes them all coincide
    from tpo.train import _rng
    from tpo.trees import problems

    big = dataclasses.replace(tiny, sft_examples=400, n_eval=50)
    sft = problems(_rng(big, 1), big.sft_examples, big.min_steps, big.max_steps, big.modulus)
    test = prepare(dataclasses.replace(big, resume=True), tmp_path).test_id
    seen = {p.prompt() for p in sft}
    assert sum(p.prompt() in seen for p in test) < 0.25 * len(test)
    trees = [dataclasses.replace(stage.train_trees[0], prompt=f"p{i}") for i in range(20)]
    fit, held = split_trees(trees, 0)
    assert (
        len(fit) == 17 and len(held) == 3 and not {t.prompt for t in fit} & {t.prompt for t in held}
    )


def test_preference_losses_at_the_reference_and_the_official_dpo_mean_reward(tiny, tmp_path):
    """With pi = pi_ref every implicit reward is 0, so DPO's loss is log 2 (a sign error in
    the log-ratio breaks it); --dpo-reward mean divides each response's summed log-ratio by
    its token count (the official masked mean)."""
    import copy

    import torch

    from tpo.evaluation import reference_steps, step_counts, step_logps, tree_batch
    from tpo.train import preference_loss, prepare

    stage = prepare(tiny, tmp_path)
    trees, refs = stage.train_trees[:4], stage.train_ref[:4]
    with torch.no_grad():
        at_ref = preference_loss("dpo", stage.sft, stage.tok, trees, refs, tiny)
    assert float(at_ref) == pytest.approx(math.log(2), abs=1e-6)
    policy = copy.deepcopy(stage.sft)
    with torch.no_grad():
        for q in policy.parameters():
            q.add_(0.05 * torch.randn_like(q))
        got = preference_loss(
            "dpo", policy, stage.tok, trees, refs, dataclasses.replace(tiny, dpo_reward="mean")
        )
        batch, scores = tree_batch(stage.tok, trees, "cpu")
        pol, _ = step_logps(policy, batch)
        ref = torch.stack(reference_steps(stage.sft, stage.tok, trees, "cpu")).flatten(0, 1)
        k = min(pol.shape[1], ref.shape[1])
        tokens = step_counts(batch, pol.shape[1]).sum(-1)
        mean = (tiny.beta * (pol.sum(-1) - ref[:, :k].sum(-1)) / tokens).view(scores.shape)
        rows = torch.arange(scores.shape[0])
        win, lose = mean[rows, scores.argmax(-1)], mean[rows, scores.argmin(-1)]
        expected = -torch.nn.functional.logsigmoid(win - lose).mean()
    assert float(got) == pytest.approx(float(expected), rel=1e-5)


def test_sft_slip_makes_the_slip_the_majority_and_leaves_the_default_data_alone(monkeypatch):
    """sft_slip = 0 draws nothing extra (the default SFT data are the same as before the option);
    at 0.6 most SFT solutions of problems with a 'v * b' step, 2b > m, carry the slip."""
    import torch

    from tpo import train as tr
    from tpo.config import PRESETS
    from tpo.data import Tokenizer, slipped_solution, solution

    seen = {}

    def capture(tok, prompts, texts):
        seen["texts"] = list(texts)
        raise StopIteration  # stop before the optimiser: only the data are checked

    monkeypatch.setattr(tr, "encode_pairs", capture)
    cfg = dataclasses.replace(PRESETS["quick"], sft_examples=400)
    model = torch.nn.Linear(1, 1)
    texts = {}
    for slip in (0.0, 0.6):
        with pytest.raises(StopIteration):
            tr.train_sft(model, Tokenizer(5), dataclasses.replace(cfg, sft_slip=slip))
        texts[slip] = seen["texts"]
    probs = tr.problems(tr._rng(cfg, 1), 400, cfg.min_steps, cfg.max_steps, cfg.modulus)
    rng = tr._rng(cfg, 1)
    tr.problems(rng, 400, cfg.min_steps, cfg.max_steps, cfg.modulus)
    expected = [
        tr.wrong_solution(p, rng)[0] if rng.random() < cfg.sft_corrupt else solution(p)
        for p in probs
    ]
    assert texts[0.0] == expected  # the data without the option, draw for draw
    trap = [i for i, p in enumerate(probs) if slipped_solution(p) != solution(p)]
    slipped = [i for i in trap if texts[0.6][i] == slipped_solution(probs[i])]
    assert len(trap) > 50 and 0.5 < len(slipped) / len(trap) < 0.7
