"""Wiring the mutation session checks: which rows feed which set, which label the sampler is
given, which candidate best-of-k keeps, how the Score normalises cost."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from genre import binned_transformer as bt
from genre import metrics
from genre.data import MinMax
from genre.protocol import fit_world
from genre.train import fit_pair_model


@pytest.fixture
def world(tiny):
    return fit_world(dataclasses.replace(tiny, n_negatives=20, max_rows=1500))


def _rows(a: np.ndarray) -> set:
    return {tuple(r) for r in np.asarray(a).round(6)}


def test_partners_are_training_rows_and_negatives_test_rows(world):
    """D+ (the top-K candidates of Q, NNR's and ExactQ's pool) holds training rows, never test
    rows; the explained negatives are test rows."""
    pos = _rows(world.x_pos.numpy())
    assert pos <= _rows(world.x[world.train])
    assert not pos & _rows(world.x[world.test])
    # the negatives every method explains (and tunes on) are disjoint test rows
    assert set(world.negatives) <= set(world.test)
    assert set(world.val_negatives) <= set(world.test)
    assert not set(world.negatives) & set(world.val_negatives)


def test_pair_model_trains_and_samples_with_the_favourable_label(tiny, monkeypatch):
    """Training pairs and recourse sampling both condition the decoder on y+ = 1."""
    seen = {}
    loss, sample = bt.PairTransformer.loss, bt.PairTransformer.sample

    def spy_loss(self, x, y, x_plus, y_plus):
        seen.setdefault("train", []).append(y_plus.clone())
        return loss(self, x, y, x_plus, y_plus)

    def spy_sample(self, x, y, y_plus, *a, **k):
        seen["sample_y"], seen["sample_y_plus"] = y.clone(), y_plus.clone()
        return sample(self, x, y, y_plus, *a, **k)

    monkeypatch.setattr(bt.PairTransformer, "loss", spy_loss)
    monkeypatch.setattr(bt.PairTransformer, "sample", spy_sample)
    cfg = dataclasses.replace(tiny, epochs=1)
    g = torch.Generator().manual_seed(0)
    x_neg, x_pos = torch.rand(30, 3, generator=g), torch.rand(20, 3, generator=g)
    model, _ = fit_pair_model(cfg, x_neg, torch.zeros(30), x_pos, torch.zeros(3, dtype=bool))
    assert all(bool((t == 1).all()) for t in seen["train"])
    h = lambda z: torch.sigmoid(z.sum(-1))
    no = torch.zeros(3, dtype=bool)
    bt.genre_recourse(model, h, x_neg[:4], no, no, 10.0, 3, g)
    assert bool((seen["sample_y_plus"] == 1).all())


def test_best_of_k_keeps_the_candidate_h_rates_highest(monkeypatch):
    cands = torch.tensor([[0.1, 0.0], [0.9, 0.0], [0.5, 0.0], [0.2, 0.0], [0.3, 0.0], [0.8, 0.0]])
    monkeypatch.setattr(bt.PairTransformer, "sample", lambda self, x, *a, **k: cands)
    model = bt.PairTransformer(2, 8, 8, 2, 1, 8, 0.0)
    h = lambda z: z[..., 0]  # h rises with the first feature
    no = torch.zeros(2, dtype=bool)
    out = bt.genre_recourse(model, h, torch.zeros(2, 2), no, no, 10.0, 3)
    assert torch.allclose(out[:, 0], torch.tensor([0.9, 0.8]))


def test_high_temperature_is_greedy():
    """Logits are multiplied by tau: at tau = 1e4 every draw is the argmax bin."""
    torch.manual_seed(0)
    model = bt.PairTransformer(3, 10, 16, 2, 1, 16, 0.0).eval()
    x = torch.rand(1, 3).repeat(40, 1)
    ones = torch.ones(40)
    greedy = model.sample(x, ones, ones, 1e4, torch.Generator().manual_seed(0))
    assert (greedy == greedy[0]).all()
    loose = model.sample(x, ones, ones, 1e-3, torch.Generator().manual_seed(0))
    assert not (loose == loose[0]).all()


def test_score_divides_cost_by_the_number_of_features():
    x = np.zeros((5, 2))
    cf = np.ones((5, 2))  # cost 2 each, d = 2, n = 5
    lof = metrics.fit_lof(np.random.default_rng(0).random((20, 2)))
    out = metrics.per_instance(
        x, cf, np.ones(5), np.ones(5), {"lof": lof}, np.zeros(2, bool), np.zeros(2, bool)
    )
    np.testing.assert_allclose(out["score"], 1.0 + out["lof"] - 1.0)


def test_minmax_maps_each_column_onto_unit_interval():
    raw = np.array([[10.0, -3.0], [20.0, 1.0], [15.0, -1.0]])
    z = MinMax(raw).transform(raw)
    np.testing.assert_allclose(z, [[0, 0], [1, 1], [0.5, 0.5]])


def test_heloc_is_shipped_with_the_papers_preprocessing():
    from genre.data import load

    tab = load("heloc")
    assert tab.x.shape == (9871, 21) and not tab.immutable.any() and not tab.categorical.any()
    assert 0.4 < tab.y.mean() < 0.5  # 4,735 good of 9,871
    assert tab.x.min() == 0.0 and tab.x.max() == 1.0
    # favourable = good: the better external risk estimate (feature 0) belongs to y = 1
    assert tab.x[tab.y == 1, 0].mean() > tab.x[tab.y == 0, 0].mean()


def test_heloc_bench_runs_and_dropped_rows_are_reported(tiny, capsys):
    from genre.bench import run_bench

    cfg = dataclasses.replace(
        tiny,
        bench_datasets=("heloc",),
        max_rows=1500,
        gamma=0.55,
        methods=("GenRe", "NNR"),
        tune=False,
    )
    doc = run_bench(cfg, figures=False)
    assert "heloc/GenRe" in doc["metrics"]
    assert {c["id"] for c in doc["claims"]} >= {"genre-valid-plausible-heloc"}
    assert "using a random 1500 of its 9871 rows" in capsys.readouterr().err


def test_knn_plausibility_is_out_of_sample_and_separates_where_lof_saturates(world):
    """Real training positives (out of sample for the held-out fit set) score 0.5 on average by
    construction; points off the data score 0; points at the data's densest place score near
    1, where LOF calls both those and the real positives inliers."""
    p_gold = world.gold.predict_proba(world.x)[:, 1]
    real = world.x[world.train][p_gold[world.train] > 0.5]
    assert abs(world.knn(real).mean() - 0.5) < 0.01
    assert world.knn(np.full((5, world.x.shape[1]), 5.0)).max() == 0.0
    dense = real[np.argsort(world.knn.distance(real))[:20]]
    assert world.knn(dense).mean() > 0.9
    assert metrics.lof_inlier_rate(world.lofs["lof"], dense) == 1.0
    assert metrics.lof_inlier_rate(world.lofs["lof"], real) > 0.9  # LOF: both ~1


def test_knn_plausibility_on_a_hand_built_case():
    held = np.array([[0.0], [1.0], [2.0], [3.0]])
    knn = metrics.KnnPlausibility(held, np.array([[0.5], [1.5], [2.5], [9.0]]), k=1)
    # reference d_1 = 0.5, 0.5, 0.5, 6.0: share of them at least a point's own d_1
    np.testing.assert_allclose(knn(np.array([[1.0], [0.5], [4.0], [20.0]])), [1, 1, 0.25, 0])
