"""Entry point: artefacts, finite metrics, determinism, the official protocol's pieces (LOF
fit set, balanced h, pair-model splits), full and paper presets at tiny size, moons validity."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from conftest import TINY
from genre import classifiers
from genre.config import CONTROL, FLOOR, ORACLE, PRESETS
from genre.protocol import fit_world, new_pair_model
from genre.train import evaluate, fit_pair_model, train_and_evaluate, train_and_evaluate_full


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["epochs"] == tiny.epochs
    assert (tmp_path / "run" / "pair_model.safetensors").exists()
    for name in (*tiny.methods, ORACLE, FLOOR, CONTROL):
        assert 0 <= metrics[f"{name}/gold_validity"] <= 1 and metrics[f"{name}/cost"] >= 0
        assert f"{name}/lof_train_fit" in metrics and f"{name}/score" in metrics
    assert all(math.isfinite(v) for v in metrics.values())
    genre = {k: v for k, v in metrics.items() if k.startswith("GenRe/") and "seconds" not in k}
    (tmp_path / "run" / "metrics.json").unlink()  # eval measures again, it does not re-read
    again = evaluate(tiny, tmp_path / "run")
    assert {k: v for k, v in again.items() if k in genre} == genre
    assert again["GenRe/temperature"] in (3.0, 10.0, 30.0)
    resumed = dataclasses.replace(tiny, resume=True, methods=("GenRe",))
    again = train_and_evaluate(resumed, tmp_path / "run")
    assert again["GenRe/cost"] == metrics["GenRe/cost"]  # same checkpoint, same seed


def test_eval_uses_the_saved_checkpoint(tiny, tmp_path):
    """An untrained pair model in the checkpoint's place gives other recourses; a checkpoint of
    another architecture is a ValueError naming the file."""
    cfg = dataclasses.replace(tiny, methods=("GenRe",))
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    ckpt = tmp_path / "run" / "pair_model.safetensors"
    untrained = new_pair_model(cfg, 2).state_dict()
    save_file({k: v.contiguous() for k, v in untrained.items()}, str(ckpt))
    assert evaluate(tiny, tmp_path / "run")["GenRe/cost"] != metrics["GenRe/cost"]
    other = new_pair_model(dataclasses.replace(cfg, d_model=8), 2).state_dict()
    save_file({k: v.contiguous() for k, v in other.items()}, str(ckpt))
    with pytest.raises(ValueError, match="pair_model.safetensors: does not fit"):
        evaluate(tiny, tmp_path / "run")


def test_same_seed_same_numbers(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, methods=("GenRe", "NNR", "Wachter"))
    a, b = train_and_evaluate(cfg, tmp_path / "a"), train_and_evaluate(cfg, tmp_path / "b")
    untimed = lambda m: {k: v for k, v in m.items() if "seconds" not in k}
    assert untimed(a) == untimed(b)


def test_lof_is_fitted_on_all_gold_positive_rows(tiny):
    """Official notebook: LOF fitted on train + test rows the gold model calls positive."""
    w = fit_world(tiny)
    p_gold = classifiers.gold_proba(w.gold, w.x)
    assert w.lofs["lof"].n_samples_fit_ == int((p_gold > 0.5).sum())
    assert w.lofs["lof_train_fit"].n_samples_fit_ == int((p_gold[w.train] > 0.5).sum())
    w = fit_world(dataclasses.replace(tiny, lof_fit="train"))
    assert w.lofs["lof"].n_samples_fit_ == int((p_gold[w.train] > 0.5).sum())


def test_balanced_weights_raise_minority_predictions():
    rng = np.random.default_rng(0)
    x = rng.random((600, 2)).astype(np.float32)
    y = (x[:, 0] + 0.3 * rng.standard_normal(600) > 0.85).astype(np.int64)  # ~30% positives
    plain = classifiers.train_classifier(x, y, 20, 0, balanced=False)
    balanced = classifiers.train_classifier(x, y, 20, 0, balanced=True)
    with torch.no_grad():
        xt = torch.as_tensor(x)
        assert (balanced(xt) > 0.5).float().mean() > (plain(xt) > 0.5).float().mean() + 0.05


def test_pair_model_keeps_best_checked_validation_loss(tiny):
    w = fit_world(tiny)
    x_tr = torch.as_tensor(w.x[w.train])
    y_neg = torch.as_tensor(w.y[w.train][w.neg_mask]).float()
    cfg = dataclasses.replace(tiny, epochs=5, eval_every=2)
    _, log = fit_pair_model(cfg, x_tr[w.neg_mask], y_neg, w.x_pos, w.immutable)
    assert [epoch for epoch, _ in log["val"]] == [0, 2, 4] and len(log["train"]) == 5


@pytest.mark.parametrize("preset", ["full", "paper"])
def test_big_presets_run_one_step_at_tiny_size(preset, tmp_path):
    cfg = dataclasses.replace(
        PRESETS[preset],
        device="cpu",
        dataset="moons",
        epochs=1,
        rf_trees=5,
        clf_epochs=40,
        n_negatives=4,
        n_val_negatives=5,
        n_timing=2,
        methods=("GenRe", "NNR"),
        sweep_temperatures=(10.0,),
        sweep_lams=(5.0,),
        sweep_retrain_lams=(),
        threads=1,
        quiet=True,
    )
    result = train_and_evaluate_full(cfg, tmp_path)
    assert math.isfinite(result["metrics"]["GenRe/cost"])
    assert cfg.n_layers == {"full": 16, "paper": 4}[preset]


def test_paper_preset_has_every_quick_claim():
    """paper.json carries the quick claims (matched by id in the report); GenRe's lambda curve
    is retrained on the first bench dataset, COMPAS."""
    quick, paper = PRESETS["quick"], PRESETS["paper"]
    assert set(quick.bench_datasets) <= set(paper.bench_datasets)
    assert paper.bench_datasets[0] == "compas" and paper.sweep_retrain_lams
    assert {"compas", "adult", "heloc"} <= set(paper.bench_datasets)  # the paper's three tables


def test_genre_is_valid_on_moons(tmp_path):
    """The issue's sanity check: on two-moons GenRe's recourse is gold-valid >= 95%."""
    cfg = dataclasses.replace(
        PRESETS["quick"],
        **{
            **TINY,
            "epochs": 15,
            "d_model": 32,
            "n_heads": 4,
            "n_bins": 50,
            "top_k": 100,
            "best_k": 10,
            "n_negatives": 100,
            "rf_trees": 50,
            "tune": False,
        },
        methods=("GenRe",),
    )
    assert train_and_evaluate(cfg, tmp_path)["GenRe/gold_validity"] >= 0.95
