"""Q(x+|x): normalisation and immutables against a brute-force loop, the NNR limit, no-partner."""

from __future__ import annotations

import math

import pytest
import torch

from genre.baselines import nnr
from genre.pairs import partner_sets, q_recourse, sample_partners


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    x, x_pos = torch.rand(6, 3, generator=g), torch.rand(40, 3, generator=g)
    x[:, 0], x_pos[:, 0] = x[:, 0].round(), x_pos[:, 0].round()  # a binary immutable feature
    return x, x_pos, torch.tensor([True, False, False])


def test_pair_probabilities_match_loop_and_respect_immutables():
    x, x_pos, imm = _data()
    idx, prob, has = partner_sets(x, x_pos, lam=5.0, top_k=40, immutable=imm)
    assert has.all() and torch.allclose(prob.sum(1), torch.ones(6))
    for i in range(6):
        w = [math.exp(-5.0 * float((x[i] - p).abs().sum())) * float(x[i, 0] == p[0]) for p in x_pos]
        for k in range(40):
            assert abs(float(prob[i, k]) - w[int(idx[i, k])] / sum(w)) < 1e-5
    picks = sample_partners(idx, prob, torch.Generator().manual_seed(1))
    assert torch.equal(x_pos[picks][:, 0], x[:, 0])


def test_infinite_lambda_is_nnr():
    x, x_pos, imm = _data(1)
    idx, prob, _ = partner_sets(x, x_pos, lam=1e6, top_k=5, immutable=imm)
    assert torch.allclose(prob[:, 0], torch.ones(6))
    partners = x_pos[sample_partners(idx, prob, torch.Generator().manual_seed(0))]
    assert torch.equal(partners, nnr(x, x_pos, imm))
    for i in range(6):  # brute-force nearest admissible neighbour
        d = [float((x[i] - p).abs().sum()) if p[0] == x[i, 0] else math.inf for p in x_pos]
        assert torch.equal(partners[i], x_pos[min(range(40), key=d.__getitem__)])


def test_negative_without_partner_warns_and_gives_no_nan():
    x, x_pos, imm = _data()
    x_pos[:, 0] = 1.0
    x[0, 0] = 0.0  # no positive shares this immutable value
    with pytest.warns(UserWarning, match="no admissible partner"):
        _, prob, has = partner_sets(x, x_pos, lam=5.0, top_k=10, immutable=imm)
    assert not has[0] and not torch.isnan(prob).any()
    with pytest.raises(ValueError, match="no admissible partner"), pytest.warns(UserWarning):
        nnr(x, x_pos, imm)


class _Ones(torch.nn.Module):
    def forward(self, x):
        return torch.ones(x.shape[:-1])


def test_exact_q_sampler_limits():
    """lambda -> infinity with one draw is NNR; the floor (lambda = 0 over all of D+) only
    returns admissible positives and draws more than one distinct partner."""
    x, x_pos, imm = _data(2)
    cat = torch.tensor([True, False, False])
    g = torch.Generator().manual_seed(0)
    sharp = q_recourse(x, x_pos, 1e6, 5, imm, cat, _Ones(), 1, g)
    assert torch.equal(sharp, nnr(x, x_pos, imm))
    floor = q_recourse(x.repeat(20, 1), x_pos, 0.0, len(x_pos), imm, cat, _Ones(), 1, g)
    assert torch.equal(floor[:, 0], x.repeat(20, 1)[:, 0])
    assert all((floor[i] == x_pos).all(1).any() for i in range(len(floor)))
    assert len(torch.unique(floor[::6], dim=0)) > 1


def test_exact_q_sampler_keeps_x_without_partner():
    x, x_pos, imm = _data()
    x_pos[:, 0] = 1.0
    x[0, 0] = 0.0
    cat = torch.tensor([True, False, False])
    with pytest.warns(UserWarning, match="no admissible partner"):
        out = q_recourse(x, x_pos, 5.0, 10, imm, cat, _Ones(), 3, torch.Generator().manual_seed(0))
    assert torch.equal(out[0], x[0]) and not torch.isnan(out).any()
