"""REGENT's interpolation (Eq. 2), distances, mixed cross-entropy, and a falling loss."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from regent.config import PRESETS
from regent.data import rollout_expert
from regent.envs import make_tasks
from regent.pretrain import pretrain, pretraining_batch
from regent.regent import (
    RegentModel,
    build_context,
    context_distances,
    interpolate_continuous,
    interpolate_discrete,
    mixed_cross_entropy,
    rp_distribution,
)
from regent.retrieval import Retriever, p95_normaliser


def test_distances_are_to_the_first_retrieved_state():
    rng = np.random.default_rng(0)
    ctx, query = rng.normal(size=(3, 5, 4)), rng.normal(size=(3, 4))
    d = context_distances(ctx, query, normaliser=2.0)
    assert d.shape == (3, 6) and np.all(d[:, 0] == 0)
    for b in range(3):
        for i in range(5):
            assert np.isclose(d[b, i], np.linalg.norm(ctx[b, i] - ctx[b, 0]) / 2.0)
        assert np.isclose(d[b, 5], np.linalg.norm(query[b] - ctx[b, 0]) / 2.0)


def test_zero_distance_gives_exactly_the_rp_action():
    raw = torch.randn(4, 3, 2) * 5
    rp = torch.rand(4, 2) * 2 - 1
    out = interpolate_continuous(raw, rp, torch.exp(-10.0 * torch.zeros(4, 3)))
    assert torch.equal(out, rp.unsqueeze(1).expand_as(out))
    first = torch.tensor([0, 3, 1, 2])
    dist = torch.zeros(4, 3)
    probs = interpolate_discrete(
        torch.randn(4, 3, 4), rp_distribution(first, dist, 4), torch.exp(-10 * dist)
    )
    assert torch.equal(probs, F.one_hot(first, 4).float().unsqueeze(1).expand_as(probs))


def test_continuous_interpolation_matches_formula():
    raw, rp, d = torch.randn(2, 3, 2) * 3, torch.rand(2, 2), torch.rand(2, 3)
    out = interpolate_continuous(raw, rp, torch.exp(-10 * d), scale=10.0)
    for b in range(2):
        for i in range(3):
            w = float(np.exp(-10 * float(d[b, i])))
            want = w * rp[b] + 10 * (1 - w) * raw[b, i].clamp(-1, 1)
            assert torch.allclose(out[b, i], want, atol=1e-6)


def test_mixed_probabilities_sum_to_one_and_follow_the_formula():
    logits = torch.randn(5, 7, 4) * 3
    first = torch.randint(4, (5,))
    dist = torch.rand(5, 7) * 1.5  # some beyond 1, where q_RP becomes uniform
    q = rp_distribution(first, dist, 4)
    assert torch.allclose(q.sum(-1), torch.ones(5, 7))
    probs = interpolate_discrete(logits, q, torch.exp(-10 * dist))
    assert torch.allclose(probs.sum(-1), torch.ones(5, 7), atol=1e-6) and (probs >= 0).all()
    b, i = 2, 3
    dt = min(float(dist[b, i]), 1.0)
    q_ref = torch.full((4,), dt / 4)
    q_ref[first[b]] += 1 - dt
    w = float(torch.exp(-10 * dist[b, i]))
    assert torch.allclose(probs[b, i], w * q_ref + (1 - w) * logits[b, i].softmax(-1), atol=1e-6)


def test_mixed_cross_entropy_is_nll_of_the_probabilities_not_a_second_softmax():
    probs = torch.softmax(torch.randn(6, 5), -1)
    target = torch.randint(5, (6,))
    assert torch.allclose(
        mixed_cross_entropy(probs, target), F.nll_loss(probs.log(), target), atol=1e-6
    )
    assert not torch.allclose(mixed_cross_entropy(probs, target), F.cross_entropy(probs, target))


def test_model_prediction_at_first_position_is_rp_action():
    demos = rollout_expert(make_tasks("point", 1, seed=0)[0], 3, seed=0, noise=0.1)
    retriever = Retriever(demos)
    idx, _ = retriever.retrieve(demos.obs[:4] + 0.01, 5)
    batch = build_context(
        demos, idx, demos.obs[:4] + 0.01, demos.rew[:4], None, retriever.normaliser
    )
    model = RegentModel(2, 2, False, 16, 1, 2, 6)
    out = model.predict(batch, True, 10.0, 10.0)
    assert torch.allclose(out[:, 0], batch["act"][:, 0])


def test_loss_falls_on_one_task(tmp_path):
    cfg = dataclasses.replace(
        PRESETS["quick"],
        n_retrieved=5,
        d_model=32,
        n_layers=1,
        steps=150,
        batch_size=32,
        quiet=True,
    )
    demos = rollout_expert(make_tasks("point", 1, seed=1)[0], 8, seed=1, noise=0.1)
    data, ratios = pretraining_batch([demos], cfg.n_retrieved, "nn1")
    official, ours = (p95_normaliser(demos, kind, cfg.n_retrieved) for kind in ("context", "nn1"))
    assert ratios[0] == pytest.approx(official / ours) and official != ours
    _, losses = pretrain(data, "point", cfg, True, tmp_path / "m.safetensors")
    assert np.mean(losses[-15:]) < 0.5 * np.mean(losses[:15])


def test_attention_is_causal():
    """Changing the context at positions > j leaves the outputs at positions <= j unchanged."""
    torch.manual_seed(0)
    model = RegentModel(3, 2, False, 16, 2, 2, 8).eval()
    obs, rew, act = torch.randn(2, 8, 3), torch.randn(2, 8), torch.randn(2, 8, 2)
    base = model(obs, rew, act)
    for j in range(7):
        o, r, a = obs.clone(), rew.clone(), act.clone()
        o[:, j + 1 :] += 1.0
        r[:, j + 1 :] -= 1.0
        a[:, j:] += 1.0  # a_j enters token j + 1 only
        out = model(o, r, a)
        assert torch.allclose(out[:, : j + 1], base[:, : j + 1], atol=1e-5)
        assert not torch.allclose(out[:, j + 1 :], base[:, j + 1 :])


def test_official_18_action_vocabulary():
    """q_RP's uniform term over 18 actions (the official vocabulary) still sums to one; the
    policy acts only among the environment's 4 actions."""
    from regent.pretrain import regent_policy

    first, dist = torch.tensor([1, 3]), torch.rand(2, 5) * 1.5
    q = rp_distribution(first, dist, 18)
    assert q.shape == (2, 5, 18) and torch.allclose(q.sum(-1), torch.ones(2, 5))
    assert torch.allclose(q[..., 4:], (dist.clamp(0, 1) / 18).unsqueeze(-1).expand(2, 5, 14))
    cfg = dataclasses.replace(PRESETS["quick"], action_vocab=18, n_retrieved=4)
    demos = rollout_expert(make_tasks("grid", 1, seed=0)[0], 3, seed=0, noise=0.3)
    model = RegentModel(6, 18, True, 16, 1, 2, 5).eval()
    with torch.no_grad():
        model.head.bias[4:] = 50.0  # padded actions dominate the raw output
    acts = regent_policy(model, Retriever(demos), 4, True, cfg)(
        demos.obs[:6] + 0.3, np.zeros(6, np.float32), []
    )
    assert acts.shape == (6,) and ((acts >= 0) & (acts < 4)).all()


def test_policy_mixes_rp_and_network_by_exp_minus_lambda_d_with_the_run_s_lambda_and_scale():
    """At evaluation (d > 0 for queries off the demonstrations) the action is
    clamp(e^{-lambda d} a'_1 + L (1 - e^{-lambda d}) clamp(f, -1, 1)) with the config's lambda
    and L, here different (2 and 0.5) so that a swap or a sign flip shows."""
    from regent.pretrain import regent_policy

    cfg = dataclasses.replace(PRESETS["quick"], lam=2.0, cont_scale=0.5, n_retrieved=4)
    demos = rollout_expert(make_tasks("point", 1, seed=2)[0], 3, seed=2, noise=0.1)
    retriever = Retriever(demos, "nn1", 4)
    torch.manual_seed(0)
    model = RegentModel(2, 2, False, 16, 1, 2, 5).eval()
    queries = np.random.default_rng(0).uniform(-1, 1, (6, 2)).astype(np.float32)
    rew = np.zeros(6, np.float32)
    got = regent_policy(model, retriever, 4, True, cfg)(queries, rew, [])
    idx, _ = retriever.retrieve(queries, 4)
    batch = build_context(demos, idx, queries, rew, None, retriever.normaliser)
    with torch.no_grad():
        raw = model(batch["obs"], batch["rew"], batch["act"])[:, -1].clamp(-1, 1).numpy()
    w = np.exp(-2.0 * batch["dist"][:, -1].numpy())[:, None]
    assert (w < 0.99).all() and (w > 1e-6).any()
    want = np.clip(w * demos.act[idx[:, 0]] + 0.5 * (1 - w) * raw, -1, 1)
    np.testing.assert_allclose(got, want, atol=1e-5)
