"""R_theta(x+ | x): GenRe's transformer encoder-decoder over binned features.

Official code: models/binnedpm.py (model, soft-target loss, sampler) and recourse/genre.py
(best-of-k selection). The encoder reads [y, x_1..x_d]; the decoder reads [y+, x+_1..x+_d]
under a causal mask and predicts, at each position, logits over n_bins left bin edges of a
uniform grid on [0, 1] for the next feature of x+.
"""

from __future__ import annotations

import torch
from torch import nn


def bin_edges(n_bins: int) -> torch.Tensor:
    """Left edges of n_bins equal bins on [0, 1]."""
    return torch.linspace(0.0, 1.0, n_bins + 1)[:-1]


def soft_bin_targets(v: torch.Tensor, n_bins: int) -> torch.Tensor:
    """softmax_b(-n^2 (v - b)^2 / 2): a Gaussian of width 1/n over the bins, [..., n_bins]."""
    b = bin_edges(n_bins).to(v)
    return (-(n_bins**2) * (v[..., None] - b) ** 2 / 2).softmax(-1)


class PositionLinear(nn.Module):
    """A separate linear map per sequence position (every feature has its own embedding/head)."""

    def __init__(self, positions: int, d_in: int, d_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(positions, d_in, d_out))
        self.bias = nn.Parameter(torch.zeros(positions, d_out))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        p = z.shape[1]
        return torch.einsum("bpi,pio->bpo", z, self.weight[:p]) + self.bias[:p]


class PairTransformer(nn.Module):
    def __init__(
        self,
        d: int,
        n_bins: int,
        d_model: int,
        n_heads: int,
        n_layers: int,
        d_ff: int,
        dropout: float,
    ):
        super().__init__()
        self.d, self.n_bins = d, n_bins
        self.embed = PositionLinear(d + 1, 1 + n_bins, d_model)
        self.position = nn.Parameter(torch.zeros(1, d + 1, d_model))
        self.transformer = nn.Transformer(
            d_model, n_heads, n_layers, n_layers, d_ff, dropout, batch_first=True
        )
        self.head = PositionLinear(d + 1, d_model, n_bins)  # nn.Transformer is Xavier-initialised

    def tokens(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """[y, x_1..x_j] -> embeddings; a value token is (value, its soft bin weights)."""
        value = torch.cat([x[..., None], soft_bin_targets(x, self.n_bins)], -1)
        label = (2 * y - 1)[:, None, None].expand(-1, 1, 1 + self.n_bins)
        z = torch.cat([label, value], 1)
        return self.embed(z) + self.position[:, : z.shape[1]]

    def encode(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.transformer.encoder(self.tokens(y, x))

    def decode(self, memory: torch.Tensor, y_plus: torch.Tensor, prefix: torch.Tensor):
        """Logits [b, j+1, n_bins] for features 1..j+1 of x+ given its first j features."""
        tgt = self.tokens(y_plus, prefix)
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=tgt.device)
        return self.head(self.transformer.decoder(tgt, memory, tgt_mask=mask, tgt_is_causal=True))

    def loss(self, x, y, x_plus, y_plus) -> torch.Tensor:
        """Per-pair cross-entropy against soft bin targets, summed over the d features."""
        logits = self.decode(self.encode(x, y), y_plus, x_plus)[:, : self.d]
        target = soft_bin_targets(x_plus, self.n_bins)
        return -(target * logits.log_softmax(-1)).sum((-1, -2))

    @torch.no_grad()
    def sample(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        y_plus: torch.Tensor,
        temperature: float,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Autoregressive ancestral sampling; logits are multiplied by the temperature."""
        memory = self.encode(x, y)
        edges = bin_edges(self.n_bins).to(x)
        out = x.new_zeros(len(x), 0)
        for j in range(self.d):
            logits = self.decode(memory, y_plus, out)[:, j] * temperature
            pick = torch.multinomial(logits.softmax(-1), 1, generator=generator)
            out = torch.cat([out, edges[pick]], 1)
        return out


def project(x_plus: torch.Tensor, x: torch.Tensor, immutable, categorical) -> torch.Tensor:
    """Copy immutable features from x, round binary categoricals (the sampler enforces neither)."""
    x_plus = x_plus.clone()
    x_plus[:, immutable] = x[:, immutable]
    x_plus[:, categorical] = x_plus[:, categorical].round()
    return x_plus


@torch.no_grad()
def genre_recourse(
    model: PairTransformer,
    h: nn.Module,
    x: torch.Tensor,
    immutable,
    categorical,
    temperature: float,
    best_k: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """GenRe inference: best_k samples per negative (encoder label y+ = 1), projected, and the
    one h scores highest is returned (official recourse/genre.py)."""
    model.eval()
    rep = x.repeat_interleave(best_k, 0)
    ones = torch.ones(len(rep), device=x.device)
    cand = project(
        model.sample(rep, ones, ones, temperature, generator), rep, immutable, categorical
    )
    cand = cand.view(len(x), best_k, -1)
    best = h(cand).argmax(1)
    return cand[torch.arange(len(x)), best]
