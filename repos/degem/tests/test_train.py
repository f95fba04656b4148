"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch
from sklearn.metrics import roc_auc_score

from degem.config import PRESETS, validate
from degem.diagnostics import energy_trace, head_only_trace, summarize_trace
from degem.train import evaluate, ood_metrics, train_and_evaluate


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["epochs"] == tiny.epochs
    assert "DeGEM/label_auroc" in metrics and "GNNSafe/avg_auroc" in metrics
    assert all(math.isfinite(v) for v in metrics.values())
    assert evaluate(tmp_path / "run") == metrics
    again = train_and_evaluate(tiny, tmp_path / "again")  # same seed, same numbers
    assert again == metrics


def test_full_preset_runs_one_epoch_at_tiny_size(tmp_path):
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", n_nodes=100, feat_dim=8, epochs=1, quiet=True
    )
    assert full.hidden == 512
    assert math.isfinite(train_and_evaluate(full, tmp_path)["DeGEM/avg_auroc"])


def test_ood_metrics_match_sklearn_and_closed_form():
    s_id, s_ood = torch.tensor([0.9, 0.8, 0.3]), torch.tensor([0.1, 0.5])
    m = ood_metrics(s_id, s_ood)
    ref = roc_auc_score([1, 1, 1, 0, 0], [0.9, 0.8, 0.3, 0.1, 0.5])
    assert abs(m["auroc"] - 100 * ref) < 1e-9 and abs(m["auroc"] - 100 * 5 / 6) < 1e-9
    assert m["fpr95"] == 50.0  # 95% ID recall puts the threshold at 0.3: OOD 0.5 passes, 0.1 not
    perfect = ood_metrics(torch.tensor([2.0, 3.0]), torch.tensor([0.0, 1.0]))
    assert perfect == {"auroc": 100.0, "aupr": 100.0, "fpr95": 0.0}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("homophily", 1.2, "homophily must lie in"),
        ("n_classes", 1, "n_classes must be >= 2"),
        ("ood_classes", (7,), "ood_classes must name existing classes"),
        ("ood_classes", (0, 1, 2, 3), "fewer than 2 in-distribution classes"),
        ("pattern", "ring", "pattern must be one of"),
        ("energy_bn", "batch", "energy_bn must be one of"),
    ],
)
def test_bad_config_raises_clear_error(field, value, message):
    with pytest.raises(ValueError, match=message):
        validate(dataclasses.replace(PRESETS["quick"], **{field: value}))


def test_energy_trace_follows_the_benchmark_run(tiny, tmp_path):
    """The traced training is the run's own: its last epoch gives the run's DeGEM AUROC."""
    trace = energy_trace(tiny)
    assert all(len(v) == tiny.epochs for v in trace.values())
    assert all(math.isfinite(x) for v in trace.values() for x in v)
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert trace["auroc_structure"][-1] == pytest.approx(metrics["DeGEM/structure_auroc"])
    assert trace["auroc_feature"][-1] == pytest.approx(metrics["DeGEM/feature_auroc"])
    summary = summarize_trace(trace)
    last_avg = (summary["last_auroc_structure"] + summary["last_auroc_feature"]) / 2
    assert summary["max_over_epochs_auroc_test_selected"] >= last_avg - 1e-9
    assert 0.0 <= summary["frac_epochs_buffer_below_train"] <= 1.0


def test_training_lowers_data_energy_against_noise_default_bn():
    """Default (joint) batch norm: the training nodes' eval-mode energy starts at that of U[0, 1)
    noise (where fresh SGLD chains start) and ends clearly below it."""
    cfg = dataclasses.replace(PRESETS["quick"], n_nodes=400, epochs=60, homophily=0.8, quiet=True)
    assert cfg.energy_bn == "joint"
    trace = energy_trace(cfg)
    gap = [n - t for n, t in zip(trace["e_noise"], trace["e_train"], strict=True)]
    late = gap[30:]
    assert abs(gap[0]) < 0.1, gap[0]
    assert min(late) > 0 and sum(late) / len(late) > gap[0] + 0.1, (gap[0], late)


def test_head_alone_on_frozen_encoder_puts_data_below_buffer(tiny):
    """The diagnostic starts from the run's trained model and, unlike the joint schedule, lets the
    energy head reach the contrastive-divergence ordering: data energy below the SGLD samples'."""
    trace = head_only_trace(tiny, 200, 50)
    assert trace["step"] == [0, 50, 100, 150, 200]
    assert trace["auroc_structure"][0] == pytest.approx(energy_trace(tiny)["auroc_structure"][-1])
    gaps = [b - t for b, t in zip(trace["e_buffer"], trace["e_train"], strict=True)]
    assert gaps[0] < 0 < gaps[-1], gaps
