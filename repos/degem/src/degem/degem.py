"""DeGEM (Chen et al., ICLR 2025): a graph encoder and a latent energy head trained together.

Encoder: multi-hop (MH) features X^(k) = (beta I + A_hat)^k X, cached once; one bias-free map per
hop, row L2 normalisation, ReLU, concatenation, dropout, linear + ReLU -> z (Sec. 4.2).
Encoder loss: DGI-style contrast of z against shuffled-feature negatives, with the energy
readout (ERo) c = gamma sum_i p_i z_i + (1 - gamma) mean(z), p = softmax(-E) (Sec. 4.3).
Energy head: conditional energy (CE) E(z; c) = MLP([z, rho c]) on detached z, trained by
maximum likelihood / contrastive divergence with latent SGLD negatives and a replay buffer
(Sec. 4.1, Eq. 3-5). One joint step per epoch is the recurrent update (Alg. 1). Score: -E.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn.conv.gcn_conv import gcn_norm


def normalized_adjacency(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    """A_hat = D^-1/2 A D^-1/2 (PyG's gcn_norm without self-loops) as a sparse (n, n) tensor.

    The graph is undirected, so gcn_norm's in-degree is the degree; isolated rows are 0.
    """
    ei, values = gcn_norm(edge_index, None, n, add_self_loops=False)
    return torch.sparse_coo_tensor(ei, values, (n, n), check_invariants=False).coalesce()


def hop_features(x: torch.Tensor, adj: torch.Tensor, hops: int, beta: float) -> torch.Tensor:
    """Stack [X^(0), ..., X^(K)] with X^(k) = beta X^(k-1) + A_hat X^(k-1); shape (K+1, n, d)."""
    out = [x]
    for _ in range(hops):
        out.append(beta * out[-1] + torch.sparse.mm(adj, out[-1]))
    return torch.stack(out)


class MultiHopEncoder(nn.Module):
    """MH encoder: per-hop bias-free maps, L2 row norm, ReLU, concat, dropout, linear + ReLU."""

    def __init__(self, in_dim: int, hidden: int, hops: int, dropout: float):
        super().__init__()
        self.hop_maps = nn.Parameter(torch.empty(hops + 1, in_dim, hidden))
        nn.init.xavier_uniform_(self.hop_maps)
        self.out = nn.Linear((hops + 1) * hidden, hidden)
        self.dropout = dropout

    def forward(self, hops_x: torch.Tensor) -> torch.Tensor:
        h = F.relu(F.normalize(torch.bmm(hops_x, self.hop_maps), dim=-1))
        h = h.permute(1, 0, 2).reshape(hops_x.shape[1], -1)
        return F.relu(self.out(F.dropout(h, self.dropout, self.training)))


class EnergyHead(nn.Module):
    """Conditional energy E(z; c) = MLP([z, rho c]): linear, ReLU, batch norm, dropout, linear (CE).

    With batch_norm=False the batch norm layer is left out (energy_bn = 'none'); the configured
    dropout is 0.5 (official; Config.energy_dropout), 0 in the joint-head ablation.
    """

    def __init__(
        self, dim: int, hidden: int, rho: float, batch_norm: bool = True, dropout: float = 0.0
    ):
        super().__init__()
        self.rho = rho
        in_dim = 2 * dim if rho != 0 else dim
        norm = nn.BatchNorm1d(hidden) if batch_norm else nn.Identity()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.ReLU(), norm, nn.Dropout(dropout), nn.Linear(hidden, 1)
        )

    def forward(self, z: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        if self.rho != 0:
            z = torch.cat([z, (self.rho * c).expand_as(z)], dim=-1)
        return self.net(z).squeeze(-1)


def energy_readout(z: torch.Tensor, p: torch.Tensor | None, gamma: float) -> torch.Tensor:
    """ERo: c = gamma sum_i p_i z_i + (1 - gamma) mean_i z_i; the plain mean when p is None."""
    mean = z.mean(dim=0)
    if p is None:
        return mean
    return gamma * (p.unsqueeze(1) * z).sum(dim=0) + (1 - gamma) * mean


def sgld(energy, z: torch.Tensor, steps: int, step_size: float, noise: float) -> torch.Tensor:
    """Langevin chain z <- z - step_size grad E(z) + noise xi, xi ~ N(0, I) (Eq. 5)."""
    for _ in range(steps):
        z = z.detach().requires_grad_(True)
        grad = torch.autograd.grad(energy(z).sum(), z)[0]
        z = z - step_size * grad + noise * torch.randn_like(z)
    return z.detach()


def contrastive_divergence(e_data: torch.Tensor, e_sample: torch.Tensor, reg: float):
    """MLE gradient surrogate mean E(data) - mean E(samples) + reg (E(data)^2 + E(samples)^2)."""
    return (e_data - e_sample).mean() + reg * (e_data.pow(2).mean() + e_sample.pow(2).mean())


def dgi_loss(disc: nn.Linear, z: torch.Tensor, z_neg: torch.Tensor, c: torch.Tensor):
    """DGI encoder loss: binary cross-entropy of (W z_i) . c, real nodes 1, shuffled ones 0.

    Half of PyG's DeepGraphInfomax.loss with its weight set to W^T (tested): the official code
    averages over the 2n logits, PyG sums the two means.
    """
    scores = torch.cat([disc(z) @ c, disc(z_neg) @ c])
    labels = torch.cat([torch.ones(z.shape[0]), torch.zeros(z.shape[0])]).to(scores)
    return F.binary_cross_entropy_with_logits(scores, labels)


class DeGEM(nn.Module):
    """Encoder, DGI discriminator, energy head, linear classifier; readout state p, c; buffer."""

    def __init__(self, in_dim: int, n_classes: int, cfg):
        super().__init__()
        self.cfg = cfg
        self.encoder = MultiHopEncoder(in_dim, cfg.hidden, cfg.hops, cfg.dropout)
        self.disc = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.head = EnergyHead(
            cfg.hidden, cfg.energy_hidden, cfg.rho, cfg.energy_bn != "none", cfg.energy_dropout
        )
        self.classifier = nn.Linear(cfg.hidden, n_classes)
        self.p: torch.Tensor | None = None
        self.register_buffer("c", torch.zeros(cfg.hidden))
        self.buffer: torch.Tensor | None = None
        self.z: torch.Tensor | None = None

    def negatives(self, n: int) -> torch.Tensor:
        """SGLD negatives z~: 95% of chains restart from the replay buffer, the rest fresh."""
        cfg, dim, dev = self.cfg, self.cfg.hidden, self.c.device
        if self.buffer is None:  # first call: U[-1, 1]; later fresh chains: U[0, 1) (official)
            start = 2 * torch.rand(n, dim, device=dev) - 1
        else:
            k = min(int(n * cfg.buffer_prob), self.buffer.shape[0])
            old = self.buffer[torch.randperm(self.buffer.shape[0], device=dev)[:k]]
            start = torch.cat([old, torch.rand(n - k, dim, device=dev)])
        self.head.eval()  # batch norm in running-stat mode while sampling
        z = sgld(
            lambda u: self.head(u, self.c),
            start,
            cfg.mcmc_steps,
            cfg.mcmc_step_size,
            cfg.mcmc_noise,
        )
        self.head.train()
        keep = cfg.buffer_factor * n
        self.buffer = z if self.buffer is None else torch.cat([z, self.buffer])[:keep]
        return z

    def energies(self, z: torch.Tensor, n_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Train-mode energies of the (detached) data z and of n_samples fresh SGLD negatives.

        'separate' (official code): data and samples pass the head's batch norm as two batches,
        so each batch's mean energy is pinned to the output bias; 'joint': one batch of both, so
        data and samples are normalised by the same statistics; 'none': no batch norm.
        """
        if self.cfg.energy_bn == "separate":
            e_data = self.head(z, self.c)  # updates the running statistics before sampling
            return e_data, self.head(self.negatives(n_samples), self.c)
        e = self.head(torch.cat([z, self.negatives(n_samples)]), self.c)
        return e[: z.shape[0]], e[z.shape[0] :]

    def head_loss(self, z: torch.Tensor, train_idx: torch.Tensor) -> torch.Tensor:
        """Contrastive divergence of the energy head alone on fixed z and readout c (Eq. 3-5)."""
        e_all, e_sample = self.energies(z.detach(), train_idx.numel())
        return contrastive_divergence(e_all[train_idx], e_sample, self.cfg.reg)

    def loss(self, hops_x, x, adj, train_idx, y) -> dict[str, torch.Tensor]:
        """One recurrent update (Alg. 1): energy MLE on detached z, DGI with ERo, classifier CE.

        p = softmax(-E) weights the readout c that the DGI loss uses; with cfg.readout_grad (the
        official code) the DGI loss also trains the energy head through p.
        """
        cfg = self.cfg
        z = self.encoder(hops_x)
        perm = torch.randperm(x.shape[0], device=x.device)
        z_neg = self.encoder(hop_features(x[perm], adj, cfg.hops, cfg.beta))
        self.c = energy_readout(z.detach(), self.p, cfg.gamma)
        e_all, e_sample = self.energies(z.detach(), train_idx.numel())
        l_energy = contrastive_divergence(e_all[train_idx], e_sample, cfg.reg)
        p = torch.softmax(-e_all, dim=0)
        self.p = p.detach()
        c = energy_readout(z, p if cfg.readout_grad else self.p, cfg.gamma)
        l_dgi = dgi_loss(self.disc, z, z_neg, c)
        l_cls = F.cross_entropy(self.classifier(z[train_idx]), y[train_idx])
        self.c = c.detach()
        self.z = z.detach()  # for head-only steps after this update (cfg.head_steps > 1)
        total = l_energy + l_dgi + cfg.cls_weight * l_cls
        return {"loss": total, "energy": l_energy, "dgi": l_dgi, "cls": l_cls}

    @torch.no_grad()
    def embed(self, hops_x: torch.Tensor) -> torch.Tensor:
        """Eval-mode embeddings z of every node."""
        was = self.training
        self.eval()
        z = self.encoder(hops_x)
        self.train(was)
        return z

    @torch.no_grad()
    def score_and_logits(self, hops_x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Score -E(z_i; c) of every node (no energy propagation) and classifier logits."""
        was = self.training
        self.eval()
        z = self.encoder(hops_x)
        out = -self.head(z, self.c), self.classifier(z)
        self.train(was)
        return out
