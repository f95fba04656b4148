"""The pair model: soft bin targets, the loss against a Python loop, the causal mask, sampling."""

from __future__ import annotations

import math

import pytest
import torch

from genre.binned_transformer import PairTransformer, bin_edges, genre_recourse, soft_bin_targets
from genre.classifiers import MLP


@pytest.mark.parametrize("n_bins", [5, 50])
def test_soft_targets_sum_to_one_and_peak_at_nearest_bin(n_bins):
    v = torch.rand(200, generator=torch.Generator().manual_seed(0))
    t = soft_bin_targets(v, n_bins)
    assert torch.allclose(t.sum(-1), torch.ones(200), atol=1e-6)
    nearest = (v[:, None] - bin_edges(n_bins)).abs().argmin(-1)
    assert torch.equal(t.argmax(-1), nearest)


def _model(d=4, n_bins=8, variant="binned"):
    torch.manual_seed(0)
    return PairTransformer(
        d, n_bins, d_model=16, n_heads=2, n_layers=2, d_ff=16, dropout=0.0, variant=variant
    )


@pytest.mark.parametrize("variant", ["binned", "expanded"])
def test_loss_matches_python_loop(variant):
    m = _model(variant=variant).eval()
    x, xp, y = torch.rand(3, 4), torch.rand(3, 4), torch.tensor([0.0, 1.0, 1.0])
    with torch.no_grad():
        loss = m.loss(x, y, xp, torch.ones(3))
        logits = m.decode(m.encode(x, y), torch.ones(3), xp)
    for i in range(3):
        ref = 0.0
        for j in range(4):
            logp = logits[i, j].log_softmax(-1)
            w = [math.exp(-(8**2) * (float(xp[i, j]) - b) ** 2 / 2) for b in bin_edges(8).tolist()]
            ref -= sum(wk / sum(w) * float(lk) for wk, lk in zip(w, logp))
        assert abs(float(loss[i]) - ref) < 1e-4


@pytest.mark.parametrize("variant", ["binned", "expanded"])
def test_causal_mask_hides_later_features(variant):
    m = _model(variant=variant).eval()
    x, xp, ones = torch.rand(2, 4), torch.rand(2, 4), torch.ones(2)
    memory = m.encode(x, ones)
    base = m.decode(memory, ones, xp)
    for j in range(4):  # decoder position j+1 holds x+_{j+1}; outputs 0..j predict features 1..j+1
        bumped = xp.clone()
        bumped[:, j] = 1 - bumped[:, j]
        out = m.decode(memory, ones, bumped)
        assert torch.allclose(out[:, : j + 1], base[:, : j + 1], atol=1e-6)
        if j < 3:
            assert not torch.allclose(out[:, j + 1], base[:, j + 1], atol=1e-6)


def test_samples_in_unit_interval_categoricals_integer_immutables_kept():
    m, h = _model(), MLP(4)
    x = torch.rand(16, 4)
    x[:, 2] = x[:, 2].round()
    immutable = torch.tensor([True, False, False, False])
    categorical = torch.tensor([False, False, True, False])
    g = torch.Generator().manual_seed(0)
    cf = genre_recourse(m, h, x, immutable, categorical, temperature=10.0, best_k=4, generator=g)
    assert cf.min() >= 0 and cf.max() <= 1
    assert torch.equal(cf[:, 2], cf[:, 2].round())
    assert torch.equal(cf[:, 0], x[:, 0])


@pytest.mark.parametrize("variant", ["binned", "expanded"])
def test_kv_cache_decoding_equals_full_decoding(variant):
    """One position at a time with the key/value cache gives the full causal decoder's logits,
    and the cached sampler draws exactly what the prefix-re-decoding sampler draws."""
    m = _model(d=5, variant=variant).eval()
    g = torch.Generator().manual_seed(3)
    x, xp, y = torch.rand(6, 5, generator=g), torch.rand(6, 5, generator=g), torch.ones(6)
    with torch.no_grad():
        memory = m.encode(x, y)
        assert torch.allclose(m.step_logits(memory, y, xp), m.decode(memory, y, xp), atol=1e-5)
    a = m.sample(x, y, y, 10.0, torch.Generator().manual_seed(1), kv_cache=True)
    b = m.sample(x, y, y, 10.0, torch.Generator().manual_seed(1), kv_cache=False)
    assert torch.equal(a, b)


def test_variants_differ_in_tokens_and_heads():
    binned, expanded = _model(variant="binned"), _model(variant="expanded")
    assert binned.embed.first.weight.shape[1] == 1  # a scalar per token
    assert expanded.embed.first.weight.shape[1] == 1 + 8  # value + soft bins
    assert isinstance(binned.head, torch.nn.Linear)  # one head shared by all positions
    with pytest.raises(ValueError, match="variant"):
        _model(variant="cvae")
