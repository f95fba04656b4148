"""DeGEM's pieces against closed forms, invariants and slow references; GNNSafe's propagation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from degem import baselines, data
from degem.config import ABLATIONS, PRESETS
from degem.degem import (
    DeGEM,
    MultiHopEncoder,
    dgi_loss,
    energy_readout,
    hop_features,
    normalized_adjacency,
    sgld,
)
from degem.train import ood_metrics

# The mechanics below are tested on the project's joint head (no dropout, one batch-norm batch, no
# gradient through p), the default before the third pass; the official head's pieces (separate
# batch norm, energy dropout, readout gradient) have tests of their own that switch them on.
CFG = dataclasses.replace(
    PRESETS["quick"], hidden=16, energy_hidden=8, mcmc_steps=5, **ABLATIONS["joint-head"]
)


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


def test_gnnsafe_propagation_at_alpha_08_matches_a_hand_computation():
    """Path 0-1-2 plus isolated node 3, e = [1, 0, 3, 5], alpha = 0.8 (the self weight):
    neighbour means [0, 2, 0, 0] give e1 = 0.8 e + 0.2 m = [0.8, 0.4, 2.4, 4.0]; its neighbour
    means [0.4, 1.6, 0.4, 0] give e2 = [0.72, 0.64, 2.0, 3.2]. Swapping alpha and 1 - alpha
    (invisible at alpha = 0.5) gives e1 = [0.2, 1.6, 0.6, 1.0]."""
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    e = torch.tensor([1.0, 0.0, 3.0, 5.0])
    one = baselines.propagate_energy(e, edge_index, 1, 0.8)
    assert torch.allclose(one, torch.tensor([0.8, 0.4, 2.4, 4.0]), atol=1e-6)
    two = baselines.propagate_energy(e, edge_index, 2, 0.8)
    assert torch.allclose(two, torch.tensor([0.72, 0.64, 2.0, 3.2]), atol=1e-6)
    assert torch.equal(baselines.propagate_energy(e, edge_index, 0, 0.8), e)


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
    """Gradient norm on the head of mean E(train nodes) - mean E(samples), the CD term without
    reg, with the whole graph in the data batch and the training nodes in the loss (as in loss)."""
    model, hops = _trained_step_model(mode)
    model.zero_grad()
    z = model.encoder(hops).detach()
    train = torch.arange(30)
    e_data, e_sample = model.energies(z, train.numel())
    (e_data[train].mean() - e_sample.mean()).backward()
    return float(torch.cat([p.grad.flatten() for p in model.head.parameters()]).norm())


def test_cd_term_keeps_a_gradient_on_the_training_subset_in_every_batch_norm_mode():
    # With the loss on the training nodes only (as in DeGEM.loss), the separate batch norm leaves
    # the training subset's deviation from the whole-graph batch mean: a real gradient, smaller
    # than joint's (measured: separate 1.4, joint 6.1, none 0.7 on this graph).
    sep, joint, none = (_cd_grad_norm(m) for m in ("separate", "joint", "none"))
    assert min(sep, joint, none) > 1e-2 and joint > sep, (sep, joint, none)


def test_cd_term_vanishes_under_separate_batch_norm_when_all_nodes_train():
    model, hops = _trained_step_model("separate")
    model.zero_grad()
    z = model.encoder(hops).detach()
    e_data, e_sample = model.energies(z, 40)
    (e_data.mean() - e_sample.mean()).backward()
    assert float(torch.cat([p.grad.flatten() for p in model.head.parameters()]).norm()) < 1e-3


def test_trained_head_ranks_data_above_far_points_through_the_real_sign_conventions():
    """Not a tautology: the head is trained by the real CD loss, SGLD and replay buffer on a fixed
    data cloud, and -E (the score) must then rank held-out data above points off the cloud. A
    flipped sign in the loss, the sampler or the score drives this AUROC below 50."""
    torch.manual_seed(0)
    cfg = dataclasses.replace(CFG, hidden=4, energy_hidden=16, mcmc_steps=10, rho=0.0)
    model = DeGEM(3, 2, cfg)
    z = 0.5 + 0.1 * torch.randn(400, 4)  # inside U[0, 1)^d, where fresh chains start
    train = torch.arange(200)
    opt = torch.optim.Adam(model.head.parameters(), lr=1e-2)
    for _ in range(150):
        opt.zero_grad()
        model.head_loss(z, train).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        score_data = -model.head(z[200:], model.c)
        score_far = -model.head(z[200:] + torch.tensor([1.0, -1.0, 1.0, -1.0]), model.c)
    assert ood_metrics(score_data, score_far)["auroc"] > 90


def test_score_is_minus_the_eval_mode_head_on_the_encoder():
    model, hops = _trained_step_model("joint")
    score, _ = model.score_and_logits(hops)
    model.eval()
    with torch.no_grad():
        assert torch.allclose(score, -model.head(model.encoder(hops), model.c))


def test_dgi_loss_is_half_of_pyg_deep_graph_infomax():
    from torch_geometric.nn import DeepGraphInfomax

    torch.manual_seed(0)
    z, z_neg = torch.randn(50, 8), torch.randn(50, 8)
    c = torch.sigmoid(torch.randn(8))
    disc = torch.nn.Linear(8, 8, bias=False)
    ref = DeepGraphInfomax(8, encoder=torch.nn.Identity(), summary=None, corruption=None)
    with torch.no_grad():
        ref.weight.copy_(disc.weight.T)
    assert torch.allclose(2 * dgi_loss(disc, z, z_neg, c), ref.loss(z, z_neg, c), atol=1e-5)


def test_readout_grad_decides_whether_the_dgi_loss_trains_the_energy_head():
    g = small_graph(n=120)
    adj = normalized_adjacency(g.edge_index, g.n)
    hops = hop_features(g.x, adj, CFG.hops, CFG.beta)
    norms = {}
    for flag in (False, True):
        torch.manual_seed(0)
        model = DeGEM(g.x.shape[1], 3, dataclasses.replace(CFG, readout_grad=flag))
        model.loss(hops, g.x, adj, torch.arange(30), g.y)  # sets p, so the readout uses it
        model.zero_grad()
        model.loss(hops, g.x, adj, torch.arange(30), g.y)["dgi"].backward()
        grads = [p.grad for p in model.head.parameters() if p.grad is not None]
        norms[flag] = float(torch.cat([q.flatten() for q in grads]).norm()) if grads else 0.0
    assert norms[False] == 0.0 and norms[True] > 1e-6, norms


def test_energy_dropout_sits_after_the_batch_norm_and_is_off_in_eval():
    head = DeGEM(6, 3, dataclasses.replace(CFG, energy_dropout=0.5)).head
    kinds = [type(m).__name__ for m in head.net]
    assert kinds == ["Linear", "ReLU", "BatchNorm1d", "Dropout", "Linear"]
    assert head.net[3].p == 0.5
    head.eval()
    z, c = torch.randn(10, CFG.hidden), torch.randn(CFG.hidden)
    assert torch.equal(head(z, c), head(z, c))


def test_gaussian_score_is_negative_mahalanobis_distance():
    z = torch.randn(300, 4, generator=torch.Generator().manual_seed(0)) * torch.tensor([1, 2, 3, 4])
    mean, prec = baselines.gaussian_fit(z, ridge=0.0)
    cov = np.cov(z.double().numpy().T)
    q = torch.randn(7, 4)
    d = q.double().numpy() - z.double().numpy().mean(0)
    ref = -np.einsum("ij,jk,ik->i", d, np.linalg.inv(cov), d)
    assert np.allclose(baselines.gaussian_score(q, mean, prec).numpy(), ref, rtol=1e-5)
    assert baselines.gaussian_score(mean[None].float(), mean, prec).item() == pytest.approx(0.0)


def test_contrastive_divergence_against_its_closed_form():
    """mean E(data) - mean E(samples) + reg (mean E(data)^2 + mean E(samples)^2) by hand; found by
    mutmut: a flipped sign of E(samples) or a divided regulariser survived every other test."""
    from degem.degem import contrastive_divergence

    e_data, e_sample = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 5.0])
    # (1.5 - 4.0) + 0.1 * (2.5 + 17.0) = -0.55
    assert float(contrastive_divergence(e_data, e_sample, 0.1)) == pytest.approx(-0.55)
    # the data's energy is pushed down and the samples' up: the gradient signs of the MLE surrogate
    e_data.requires_grad_(True)
    e_sample.requires_grad_(True)
    contrastive_divergence(e_data, e_sample, 0.0).backward()
    assert (e_data.grad > 0).all() and (e_sample.grad < 0).all()


# Found by a second mutmut 3.8.1 run on degem.py and baselines.py (issue 57): each test below kills
# mutants that passed every test of the suite (tests/mutants.toml lists them).


def test_encoder_row_normalisation_is_node_local_and_blind_to_each_nodes_scale():
    """Row L2 normalisation of every hop's map (Sec. 4.2): rescaling one node's hop features (a
    different factor per hop) changes no embedding, and changing one node's features changes only
    that node's. Normalising over the nodes instead (F.normalize's default dim) couples them."""
    torch.manual_seed(0)
    enc = MultiHopEncoder(6, 8, 2, 0.5).eval()
    hops_x = torch.randn(3, 10, 6)
    z = enc(hops_x)
    scaled = hops_x.clone()
    scaled[:, 3] *= torch.tensor([7.0, 0.1, 3.0])[:, None]
    assert torch.allclose(enc(scaled), z, atol=1e-6)
    changed = hops_x.clone()
    changed[:, 5] = torch.randn(3, 6)
    others = torch.arange(10) != 5
    z_changed = enc(changed)
    assert torch.allclose(z_changed[others], z[others], atol=1e-6)
    assert not torch.allclose(z_changed[5], z[5], atol=1e-4)


def test_models_discriminator_gives_the_bias_free_pyg_dgi_loss():
    """The model's own discriminator is DGI's bilinear form z^T W c with no bias (PyG's
    DeepGraphInfomax); nn.Linear's default bias=True would add b . c to every logit."""
    from torch_geometric.nn import DeepGraphInfomax

    torch.manual_seed(0)
    disc = DeGEM(6, 3, CFG).disc
    z, z_neg = torch.randn(50, CFG.hidden), torch.randn(50, CFG.hidden)
    c = torch.sigmoid(torch.randn(CFG.hidden))
    ref = DeepGraphInfomax(CFG.hidden, encoder=torch.nn.Identity(), summary=None, corruption=None)
    with torch.no_grad():
        ref.weight.copy_(disc.weight.T)
    assert torch.allclose(2 * dgi_loss(disc, z, z_neg, c), ref.loss(z, z_neg, c), atol=1e-5)


def test_sgld_chain_starts_and_replay_buffer_follow_the_official_scheme():
    """With 0 SGLD steps the negatives are the chain starts: the first call draws U[-1, 1), later
    calls restart int(buffer_prob n) chains from the replay buffer and draw the rest from U[0, 1),
    and the buffer keeps the newest buffer_factor x n samples, newest first."""
    cfg = dataclasses.replace(CFG, mcmc_steps=0, buffer_prob=0.95, buffer_factor=2)
    torch.manual_seed(0)
    model = DeGEM(6, 3, cfg)
    n, k = 40, 38  # k = int(0.95 * 40) chains restart from the buffer
    first = model.negatives(n)
    assert first.shape == (n, cfg.hidden)
    assert float(first.min()) >= -1 and float(first.max()) < 1
    assert float(first.min()) < -0.9 and float(first.max()) > 0.9
    assert torch.equal(model.buffer, first)
    second = model.negatives(n)
    old_rows = {tuple(r.tolist()) for r in first}
    from_buffer = [tuple(r.tolist()) in old_rows for r in second]
    assert from_buffer == [True] * k + [False] * (n - k)
    assert float(second[k:].min()) >= 0 and float(second[k:].max()) < 1
    assert torch.equal(model.buffer, torch.cat([second, first]))
    third = model.negatives(n)
    assert torch.equal(model.buffer, torch.cat([third, second]))  # capped at buffer_factor x n


def test_readout_weights_are_softmax_of_minus_the_energy_and_condition_the_next_update():
    """p = softmax(-E) over the nodes (low-energy nodes weigh most), and the next update's energy
    head is conditioned on the readout gamma sum_i p_i z_i + (1 - gamma) mean z with that p (Alg. 1).
    A head without batch norm or dropout is deterministic, so E can be recomputed."""
    g = small_graph(n=120)
    adj = normalized_adjacency(g.edge_index, g.n)
    hops = hop_features(g.x, adj, CFG.hops, CFG.beta)
    cfg = dataclasses.replace(CFG, energy_bn="none", energy_dropout=0.0)
    assert cfg.gamma > 0 and cfg.rho != 0
    torch.manual_seed(0)
    model = DeGEM(g.x.shape[1], 3, cfg)
    train = torch.arange(30)
    model.loss(hops, g.x, adj, train, g.y)
    p_before = model.p.clone()
    seen = []
    hook = model.head.register_forward_pre_hook(lambda mod, args: seen.append(args[1].clone()))
    model.loss(hops, g.x, adj, train, g.y)
    hook.remove()
    c = energy_readout(model.z, p_before, cfg.gamma)
    assert not torch.allclose(c, model.z.mean(0), atol=1e-4)
    assert seen and all(torch.allclose(s, c, atol=1e-6) for s in seen)
    with torch.no_grad():
        energy = model.head(model.z, c)
    assert torch.allclose(model.p, torch.softmax(-energy, dim=0), atol=1e-6)
    assert int(model.p.argmax()) == int(energy.argmin())


def test_total_loss_is_energy_plus_dgi_plus_weighted_classifier_loss():
    """Alg. 1's objective: l_energy + l_dgi + cls_weight l_cls, each term with a plus sign."""
    g = small_graph(n=120)
    adj = normalized_adjacency(g.edge_index, g.n)
    hops = hop_features(g.x, adj, CFG.hops, CFG.beta)
    torch.manual_seed(0)
    model = DeGEM(g.x.shape[1], 3, CFG)
    out = model.loss(hops, g.x, adj, torch.arange(30), g.y)
    parts = {k: float(v.detach()) for k, v in out.items()}
    assert CFG.cls_weight not in (0.0, 1.0) and parts["cls"] != 1.0
    expected = parts["energy"] + parts["dgi"] + CFG.cls_weight * parts["cls"]
    assert parts["loss"] == pytest.approx(expected, rel=1e-6)


def test_gaussian_fit_ridge_is_small_and_regularises_a_flat_cloud():
    """The default ridge (1e-3) barely moves the precision of a unit-scale cloud, and it makes a
    flat cloud's precision positive definite, so a point off the cloud's plane scores below its
    mean (a ridge subtracted from the covariance flips that direction's sign)."""
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(2000, 3, generator=gen) * torch.tensor([1.0, 2.0, 3.0])
    _mean, prec = baselines.gaussian_fit(z)
    exact = torch.linalg.inv(torch.cov(z.double().T))
    assert torch.allclose(prec, exact, rtol=5e-3)
    flat = torch.cat([torch.randn(500, 2, generator=gen), torch.zeros(500, 1)], dim=1)
    mean, prec = baselines.gaussian_fit(flat)
    assert float(torch.linalg.eigvalsh(prec).min()) > 0
    off = mean.float() + torch.tensor([0.0, 0.0, 0.1])
    assert float(baselines.gaussian_score(off[None], mean, prec)) < -1.0


def test_gcn_baseline_drops_hidden_units_in_training_only():
    """The GCN's dropout (p = 0.5) between its layers: in training the hidden layer still reaches
    the output (the first layer gets a gradient) and two passes differ, and in eval mode the
    logits are deterministic. F.dropout(h, self.training) (p = 1 in training) zeroes the hidden
    layer, so the first layer never learns and the baselines score on a bias-only output."""
    g = small_graph()
    torch.manual_seed(0)
    gcn = baselines.GCN(g.x.shape[1], 32, 3, 0.5).train()
    gcn(g.x, g.edge_index).square().sum().backward()
    assert float(gcn.conv1.lin.weight.grad.norm()) > 1e-3
    assert not torch.equal(gcn(g.x, g.edge_index), gcn(g.x, g.edge_index))
    gcn.eval()
    assert torch.equal(gcn(g.x, g.edge_index), gcn(g.x, g.edge_index))
