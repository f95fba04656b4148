"""Entry point: artefacts, finite metrics, determinism, full preset at tiny size, moons validity."""

from __future__ import annotations

import dataclasses
import json
import math

from conftest import TINY

from genre.config import PRESETS
from genre.train import evaluate, train_and_evaluate


def test_smoke_writes_config_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["epochs"] == tiny.epochs
    assert (tmp_path / "run" / "pair_model.safetensors").exists()
    for name in tiny.methods:
        assert 0 <= metrics[f"{name}/gold_validity"] <= 1 and metrics[f"{name}/cost"] >= 0
    assert all(math.isfinite(v) for v in metrics.values())
    assert evaluate(tmp_path / "run") == metrics
    resumed = dataclasses.replace(tiny, resume=True, methods=("GenRe",))
    again = train_and_evaluate(resumed, tmp_path / "run")
    assert again["GenRe/cost"] == metrics["GenRe/cost"]  # same checkpoint, same seed


def test_same_seed_same_numbers(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, methods=("GenRe", "NNR", "Wachter"))
    a, b = train_and_evaluate(cfg, tmp_path / "a"), train_and_evaluate(cfg, tmp_path / "b")
    untimed = lambda m: {k: v for k, v in m.items() if not k.endswith("seconds_per_recourse")}
    assert untimed(a) == untimed(b) and len(untimed(a)) == 3 * 6 + 2


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    full = dataclasses.replace(
        PRESETS["full"],
        device="cpu",
        dataset="moons",
        epochs=1,
        rf_trees=5,
        clf_epochs=40,
        n_negatives=4,
        methods=("GenRe", "NNR"),
        quiet=True,
    )
    metrics = train_and_evaluate(full, tmp_path)
    assert full.n_layers == 16 and math.isfinite(metrics["GenRe/cost"])


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
        },
        methods=("GenRe",),
    )
    assert train_and_evaluate(cfg, tmp_path)["GenRe/gold_validity"] >= 0.95
