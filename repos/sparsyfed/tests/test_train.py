"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from sparsyfed.config import PRESETS, validate
from sparsyfed.train import evaluate, train_and_evaluate

from .test_data import write_tiny_cifar


@pytest.mark.parametrize("method", ["dense", "topk", "flash", "sparsyfed_na", "sparsyfed"])
def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path, method):
    cfg = dataclasses.replace(tiny, method=method)
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["method"] == method
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    again = evaluate(PRESETS["quick"], tmp_path / "run")  # reloads model.safetensors
    assert again == {k: metrics[k] for k in again}
    if method == "dense":
        assert metrics["final_density"] == 1.0
        assert metrics["comm_ratio"] == pytest.approx(1.0, abs=1e-3)  # a few biases stay 0
    else:
        assert metrics["final_density"] >= 1 - cfg.sparsity - 1e-9
        assert metrics["comm_ratio"] > 5


def test_eval_tests_the_saved_model_not_the_metrics_file(tiny, tmp_path):
    from safetensors.torch import load_file, save_file

    run = tmp_path / "run"
    metrics = train_and_evaluate(dataclasses.replace(tiny, rounds=4), run)
    (run / "metrics.json").unlink()
    assert evaluate(tiny, run)["accuracy"] == metrics["accuracy"]
    saved = load_file(str(run / "model.safetensors"))
    save_file({k: v * 0 for k, v in saved.items()}, str(run / "model.safetensors"))
    zeroed = evaluate(tiny, run)
    assert zeroed["final_density"] == 0.0 and zeroed["accuracy"] < metrics["accuracy"]
    save_file({k: v for k, v in list(saved.items())[1:]}, str(run / "model.safetensors"))
    with pytest.raises(ValueError, match="model.safetensors: tensors do not fit the run's mlp"):
        evaluate(tiny, run)


def test_same_seed_same_numbers(tiny, tmp_path):
    a, b = (train_and_evaluate(tiny, tmp_path / d) for d in ("a", "b"))
    for timing in ("seconds_per_round", "train_seconds"):  # wall times are the one exception
        a.pop(timing), b.pop(timing)
    assert a == b
    c = train_and_evaluate(dataclasses.replace(tiny, seed=1), tmp_path / "c")
    assert c["uploaded_nonzeros"] != a["uploaded_nonzeros"] or c["accuracy"] != a["accuracy"]


def test_short_dense_training_learns(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, method="dense", rounds=6, alpha=1000.0, eval_every=6)
    assert train_and_evaluate(cfg, tmp_path)["accuracy"] > 0.5  # chance is 0.1


@pytest.mark.parametrize("method", ["topk", "flash", "sparsyfed_na", "sparsyfed", "sparsyfed_b1"])
def test_every_sparse_method_learns_at_90_percent_sparsity(tiny, tmp_path, method):
    """6 rounds of ~22 local steps on digits with GroupNorm, s = 0.9: far above chance (0.1)."""
    cfg = dataclasses.replace(
        tiny, method=method, arch="mlp_gn", rounds=6, alpha=1000.0, eval_every=6, sparsity=0.9
    )
    metrics = train_and_evaluate(cfg, tmp_path)
    assert metrics["accuracy"] > 0.6 and metrics["accuracy_untrained"] < 0.3
    assert metrics["final_density"] < 0.2


def test_paper_preset_runs_at_tiny_size(tmp_path):
    """The paper preset's bench end to end (synthetic CIFAR-10 batches through the CIFAR loader,
    GroupNorm CNN, every sparsity) at 2 rounds on 4 clients; same claim ids as quick."""
    from sparsyfed.bench import run_bench
    from sparsyfed.data import write_synthetic_cifar10

    write_synthetic_cifar10(tmp_path / "synth", n_train=120, n_test=40)
    paper = dataclasses.replace(
        PRESETS["paper"],
        data_dir=str(tmp_path / "synth"),
        out=str(tmp_path / "runs"),
        results_dir=str(tmp_path / "results"),
        n_clients=4,
        clients_per_round=2,
        rounds=2,
        seeds=(0,),
        quiet=True,
    )
    doc = run_bench(paper)
    # 13 rows as before, 3 under the official equal-size split, 3 methods x 2 more tuning lr0
    # (lr0 = 0.5 is the plain row: every run holds out the paper's 10% validation split)
    assert doc["mode"] == "paper" and len(doc["metrics"]) == 22
    assert all("val_accuracy" in row for row in doc["metrics"].values())
    ids = [c["id"] for c in doc["claims"]]
    assert ids == [
        "sparsyfed-near-dense-s0.9",
        "sparsyfed-beats-topk",
        "regrowth-5x-lower",
        "sparsyfed-near-dense-s0.95",
        "sparsyfed-near-dense-s0.9-tuned",
        "sparsyfed-beats-topk-tuned",
        "sparsyfed-near-dense-s0.9-lda-equal",
        "sparsyfed-beats-topk-lda-equal",
    ]
    assert set(doc["tuning"]) == {"dense", "topk", "sparsyfed"}
    assert (tmp_path / "results" / "paper.json").exists()
    assert (tmp_path / "results" / "figures" / "paper-curves.png").exists()


def test_full_preset_runs_one_round_at_tiny_size(tmp_path):
    write_tiny_cifar(tmp_path / "cifar", n=8)
    full = dataclasses.replace(
        PRESETS["full"],
        device="cpu",
        data_dir=str(tmp_path / "cifar"),
        resnet_width=4,
        n_clients=2,
        clients_per_round=2,
        rounds=1,
        quiet=True,
    )
    metrics = train_and_evaluate(full, tmp_path / "run")
    assert math.isfinite(metrics["accuracy"]) and metrics["final_density"] <= 0.2


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("sparsity", 1.0, r"sparsity must lie in \[0, 1\)"),
        ("sparsity", -0.5, r"sparsity must lie in \[0, 1\)"),
        ("beta", 0.0, "beta must be > 0"),
        ("alpha", -1.0, "alpha must be > 0"),
        ("clients_per_round", 50, "clients_per_round must be in"),
        ("method", "zerofl", "method must be one of"),
        ("arch", "vit", "dataset/arch must be"),
        ("bench_norm_arch", "vit", "bench_norm_arch must be"),
        ("dataset", "cifar10", "needs --data-dir"),
    ],
)
def test_bad_config_is_a_clear_error(tiny, field, value, message):
    with pytest.raises(ValueError, match=message):
        validate(dataclasses.replace(tiny, **{field: value}))


def test_more_clients_than_samples_is_a_clear_error(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, n_clients=5000, clients_per_round=2)
    with pytest.raises(ValueError, match="5000 clients but only"):
        train_and_evaluate(cfg, tmp_path)
