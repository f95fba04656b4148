"""DeGEM's pieces against closed forms, invariants and slow references; GNNSafe's propagation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from degem import baselines, data
from degem.config import PRESETS
from degem.degem import (
    DeGEM,
    energy_readout,
    hop_features,
    normalized_adjacency,
    sgld,
)
from degem.train import ood_metrics

CFG = dataclasses.replace(PRESETS["quick"], hidden=16, energy_hidden=8, mcmc_steps=5)


def small_graph(seed: int = 0, n: int = 60) -> data.Graph:
    return data.csbm(n, 3, 6, 1.5, 5.0, 0.3, "random", seed=seed)


def dense_adj(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    a = torch.zeros(n, n)
    a[edge_index[0], edge_index[1]] = 1.0
    return a


def test_hop_features_equal_explicit_matrix_powers():
    g = small_graph()
    a = dense_adj(g.edge_index, g.n)
    d = a.sum(1)
    a_hat = a / torch.sqrt(d[:, None] * d[None, :]).clamp(min=1e-12)
    op = 0.5 * torch.eye(g.n, dtype=torch.float64) + a_hat.double()
    hops = hop_features(g.x, normalized_adjacency(g.edge_index, g.n), 5, 0.5)
    for k in range(6):
        ref = torch.linalg.matrix_power(op, k) @ g.x.double()
        assert torch.allclose(hops[k].double(), ref, atol=1e-4), k


def test_isolated_nodes_give_no_nan():
    g = small_graph()
    keep = (g.edge_index < 50).all(0)  # nodes 50..59 lose every edge
    g = data.Graph(g.x, g.edge_index[:, keep], g.y)
    adj = normalized_adjacency(g.edge_index, g.n)
    hops = hop_features(g.x, adj, 5, 0.5)
    assert torch.isfinite(hops).all()
    assert torch.allclose(hops[3, 55], 0.5**3 * g.x[55])  # isolated: only the beta self-term
    torch.manual_seed(0)
    model = DeGEM(g.x.shape[1], 3, CFG)
    model.loss(hops, g.x, adj, torch.arange(20), g.y)["loss"].backward()
    score, logits = model.score_and_logits(hops)
    assert torch.isfinite(score).all() and torch.isfinite(logits).all()
    assert torch.isfinite(baselines.propagate_energy(score, g.edge_index, 2, 0.5)).all()


def test_energy_readout_gamma_zero_is_mean_and_gamma_one_is_weighted_sum():
    z, p = torch.randn(7, 4), torch.softmax(torch.randn(7), 0)
    assert torch.allclose(energy_readout(z, p, 0.0), z.mean(0))
    assert torch.allclose(energy_readout(z, p, 1.0), sum(p[i] * z[i] for i in range(7)))
    assert torch.allclose(energy_readout(z, None, 1.0), z.mean(0))


def test_sgld_on_quadratic_energy_keeps_stationary_variance():
    # E = |z|^2 / 2: z <- (1 - eps) z + s xi has stationary variance s^2 / (eps (2 - eps)).
    torch.manual_seed(0)
    eps, s = 0.1, 0.2
    z = sgld(lambda u: 0.5 * u.pow(2).sum(-1), torch.zeros(20000, 2), 100, eps, s)
    expected = s**2 / (eps * (2 - eps))
    assert abs(float(z.var()) / expected - 1) < 0.05
    assert abs(float(z.mean())) < 0.02


def _energy_gap_after_training(mode: str, against: str) -> tuple[float, float]:
    """E(samples) - E(training embeddings) in eval mode, before and after 40 training steps."""
    torch.manual_seed(0)
    g = small_graph(n=150)
    adj = normalized_adjacency(g.edge_index, g.n)
    hops = hop_features(g.x, adj, CFG.hops, CFG.beta)
    train = torch.arange(30)
    model = DeGEM(g.x.shape[1], 3, dataclasses.replace(CFG, energy_bn=mode))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def gap() -> float:
        model.eval()
        with torch.no_grad():
            z = model.encoder(hops)[train]
            e_data = model.head(z, model.c).mean()
            if against == "uniform":
                e_sample = model.head(2 * torch.rand(200, CFG.hidden) - 1, model.c).mean()
            else:  # the replay buffer's SGLD samples
                e_sample = model.head(model.buffer, model.c).mean()
        model.train()
        return float(e_sample - e_data)

    model.loss(hops, g.x, adj, train, g.y)  # sets the readout c
    before = gap()
    for _ in range(40):
        opt.zero_grad()
        model.loss(hops, g.x, adj, train, g.y)["loss"].backward()
        opt.step()
    return before, gap()


def test_training_lowers_data_energy_against_uniform_samples_official_bn():
    before, after = _energy_gap_after_training("separate", "uniform")
    assert after > 0 and after > before + 0.1, (before, after)


@pytest.mark.xfail(
    reason="known failure, see README Deviations: with the default joint batch norm the data energy "
    "does not end reliably below the SGLD samples' at this scale (measured gap -0.20)",
    strict=False,
)
def test_training_lowers_data_energy_against_sgld_samples_default_bn():
    before, after = _energy_gap_after_training("joint", "buffer")
    assert after > 0 and after > before + 0.1, (before, after)


def test_embeddings_and_scores_are_permutation_equivariant():
    g = small_graph()
    perm = torch.randperm(g.n, generator=torch.Generator().manual_seed(1))
    inv = torch.argsort(perm)
    g_perm = data.Graph(g.x[perm], inv[g.edge_index], g.y[perm])
    torch.manual_seed(0)
    model = DeGEM(g.x.shape[1], 3, CFG)
    adj = normalized_adjacency(g.edge_index, g.n)
    model.loss(hop_features(g.x, adj, CFG.hops, CFG.beta), g.x, adj, torch.arange(20), g.y)
    hops = hop_features(g.x, adj, CFG.hops, CFG.beta)
    hops_p = hop_features(g_perm.x, normalized_adjacency(g_perm.edge_index, g.n), CFG.hops, 0.5)
    score, logits = model.score_and_logits(hops)
    score_p, logits_p = model.score_and_logits(hops_p)
    assert torch.allclose(score_p, score[perm], atol=1e-5)
    assert torch.allclose(logits_p, logits[perm], atol=1e-5)


def test_gnnsafe_propagation_keeps_constants_and_matches_loop():
    g = small_graph()
    assert int(torch.bincount(g.edge_index[0], minlength=g.n).min()) > 0
    const = torch.full((g.n,), 3.7)
    assert torch.allclose(baselines.propagate_energy(const, g.edge_index, 2, 0.5), const)
    e = torch.randn(g.n)
    nbrs = [g.edge_index[1][g.edge_index[0] == i] for i in range(g.n)]
    ref = e.clone()
    for _ in range(2):
        ref = torch.stack([0.5 * ref[i] + 0.5 * ref[nbrs[i]].mean() for i in range(g.n)])
    assert torch.allclose(baselines.propagate_energy(e, g.edge_index, 2, 0.5), ref, atol=1e-5)


def test_energy_and_msp_scores_match_definitions():
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    ref = torch.log(torch.exp(logits / 2).sum(1)) * 2
    assert torch.allclose(baselines.energy_score(logits, 2.0), ref)
    assert torch.allclose(baselines.msp_score(logits)[1], torch.tensor(1 / 3))


def _trained_step_model(mode: str, seed: int = 0):
    """A model after one training step under energy_bn=mode, with its graph inputs."""
    g = small_graph(n=120)
    adj = normalized_adjacency(g.edge_index, g.n)
    hops = hop_features(g.x, adj, CFG.hops, CFG.beta)
    torch.manual_seed(seed)
    model = DeGEM(g.x.shape[1], 3, dataclasses.replace(CFG, energy_bn=mode))
    model.loss(hops, g.x, adj, torch.arange(30), g.y)["loss"].backward()
    return model, hops


@pytest.mark.parametrize("mode", ["joint", "separate", "none"])
def test_every_energy_bn_mode_trains_and_scores(mode):
    model, hops = _trained_step_model(mode)
    has_bn = any(isinstance(m, torch.nn.BatchNorm1d) for m in model.head.modules())
    assert has_bn == (mode != "none")
    assert all(p.grad is not None for p in model.head.parameters())
    score, _logits = model.score_and_logits(hops)
    assert score.shape == (hops.shape[1],) and torch.isfinite(score).all()
    again, _ = _trained_step_model(mode)[0].score_and_logits(hops)
    assert torch.equal(score, again)  # same seed, same numbers


def _cd_grad_norm(mode: str) -> float:
    """Gradient norm on the head of mean E(data) - mean E(samples), the CD term without reg."""
    model, hops = _trained_step_model(mode)
    model.zero_grad()
    z = model.encoder(hops).detach()
    e_data, e_sample = model.energies(z, 40)
    (e_data.mean() - e_sample.mean()).backward()
    return float(torch.cat([p.grad.flatten() for p in model.head.parameters()]).norm())


def test_cd_term_has_gradient_only_when_data_and_samples_share_the_batch_norm():
    # separate: each batch's mean energy equals the output bias, so the CD term is constant;
    # measured norms: separate ~1e-5, joint ~5, none ~0.6.
    assert _cd_grad_norm("separate") < 1e-3
    assert _cd_grad_norm("joint") > 1e-2
    assert _cd_grad_norm("none") > 1e-2


def test_score_is_negative_energy_so_low_energy_nodes_rank_as_in_distribution():
    model, hops = _trained_step_model("joint")
    score, _ = model.score_and_logits(hops)
    model.eval()
    with torch.no_grad():
        energy = model.head(model.encoder(hops), model.c)
    assert torch.allclose(score, -energy)
    low, high = torch.argsort(energy)[:20], torch.argsort(energy)[-20:]
    # ID counted as positive: nodes of lowest energy as "ID" against the highest as "OOD" -> 100
    assert ood_metrics(score[low], score[high])["auroc"] == 100.0


def test_gaussian_score_is_negative_mahalanobis_distance():
    z = torch.randn(300, 4, generator=torch.Generator().manual_seed(0)) * torch.tensor([1, 2, 3, 4])
    mean, prec = baselines.gaussian_fit(z, ridge=0.0)
    cov = np.cov(z.double().numpy().T)
    q = torch.randn(7, 4)
    d = q.double().numpy() - z.double().numpy().mean(0)
    ref = -np.einsum("ij,jk,ik->i", d, np.linalg.inv(cov), d)
    assert np.allclose(baselines.gaussian_score(q, mean, prec).numpy(), ref, rtol=1e-5)
    assert baselines.gaussian_score(mean[None].float(), mean, prec).item() == pytest.approx(0.0)
