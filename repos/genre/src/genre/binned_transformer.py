"""R_theta(x+ | x): GenRe's transformer encoder-decoder over binned features.

Official code: models/binnedpm.py (model, soft-target loss, sampler), models/utils.py
(per-position MLP embeddings, learned positions) and recourse/genre.py (best-of-k selection).
The encoder reads [y, x_1..x_d]; the decoder reads [y+, x+_1..x+_d] under a causal mask and
predicts, at each position, logits over n_bins left bin edges of a uniform grid on [0, 1] for
the next feature of x+.

Two token/head variants, as in binnedpm.py:
  binned    (PairedTransformerBinned, the one the released scripts train): a token is the
            scalar value; one head shared by all positions.
  expanded  (PairedTransformerBinnedExpanded): a token is (value, its soft bin weights); one
            head per position.
Sampling decodes one position per step with a key/value cache; `kv_cache=False` re-decodes
the whole prefix at every step, as the official `_sample` does.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def bin_edges(n_bins: int) -> torch.Tensor:
    """Left edges of n_bins equal bins on [0, 1]."""
    return torch.linspace(0.0, 1.0, n_bins + 1)[:-1]


def soft_bin_targets(v: torch.Tensor, n_bins: int) -> torch.Tensor:
    """softmax_b(-n^2 (v - b)^2 / 2): a Gaussian of width 1/n over the bins, [..., n_bins]."""
    b = bin_edges(n_bins).to(v)
    return (-(n_bins**2) * (v[..., None] - b) ** 2 / 2).softmax(-1)


def _stacked(positions: int, d_in: int, d_out: int) -> tuple[nn.Parameter, nn.Parameter]:
    """Weights of `positions` separate Linear(d_in, d_out), Xavier-initialised one by one."""
    weight = torch.empty(positions, d_in, d_out)
    for w in weight:
        nn.init.xavier_uniform_(w)
    bound = 1 / math.sqrt(d_in)
    return nn.Parameter(weight), nn.Parameter(torch.empty(positions, d_out).uniform_(-bound, bound))


class PositionLinear(nn.Module):
    """A separate linear map per sequence position (HetLinearLayer)."""

    def __init__(self, positions: int, d_in: int, d_out: int):
        super().__init__()
        self.weight, self.bias = _stacked(positions, d_in, d_out)

    def forward(self, z: torch.Tensor, start: int = 0) -> torch.Tensor:
        sl = slice(start, start + z.shape[1])
        return torch.einsum("bpi,pio->bpo", z, self.weight[sl]) + self.bias[sl]


class PositionMLP(nn.Module):
    """A separate Linear -> ReLU -> Linear per position (RealEmbeddingNet)."""

    def __init__(self, positions: int, d_in: int, d_model: int):
        super().__init__()
        self.first = PositionLinear(positions, d_in, d_model)
        self.second = PositionLinear(positions, d_model, d_model)

    def forward(self, z: torch.Tensor, start: int = 0) -> torch.Tensor:
        return self.second(torch.relu(self.first(z, start)), start)


def _split_in_proj(mha: nn.MultiheadAttention):
    w, b = mha.in_proj_weight.chunk(3), mha.in_proj_bias.chunk(3)
    return list(zip(w, b))


def _heads(t: torch.Tensor, n_heads: int) -> torch.Tensor:
    b, s, dm = t.shape
    return t.view(b, s, n_heads, dm // n_heads).transpose(1, 2)


def _keys_values(mha: nn.MultiheadAttention, x: torch.Tensor):
    """Projected keys and values of x for one attention module, [b, heads, s, d_head] each."""
    _, (wk, bk), (wv, bv) = _split_in_proj(mha)
    return _heads(F.linear(x, wk, bk), mha.num_heads), _heads(F.linear(x, wv, bv), mha.num_heads)


def _attend(mha: nn.MultiheadAttention, x: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
    """Attention of the query positions x over already projected keys k and values v."""
    (wq, bq), _, _ = _split_in_proj(mha)
    q = _heads(F.linear(x, wq, bq), mha.num_heads)
    out = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(x.shape)
    return mha.out_proj(out)


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
        variant: str = "binned",
    ):
        super().__init__()
        if variant not in ("binned", "expanded"):
            raise ValueError(f"variant must be 'binned' or 'expanded', got {variant!r}")
        self.d, self.n_bins, self.variant = d, n_bins, variant
        token = 1 if variant == "binned" else 1 + n_bins
        self.embed = PositionMLP(d + 1, token, d_model)
        self.position = nn.Parameter(torch.empty(d + 1, d_model))
        nn.init.xavier_uniform_(self.position)  # official: every >1-D parameter is Xavier'd
        self.drop = nn.Dropout(dropout)
        self.transformer = nn.Transformer(
            d_model, n_heads, n_layers, n_layers, d_ff, dropout, batch_first=True
        )  # nn.Transformer Xavier-initialises its own weights
        if variant == "binned":
            self.head = nn.Linear(d_model, n_bins)
            nn.init.xavier_uniform_(self.head.weight)
        else:
            self.head = PositionLinear(d + 1, d_model, n_bins)

    def _token(self, v: torch.Tensor) -> torch.Tensor:
        """[b, p] values -> [b, p, token]: the value, plus its soft bins for `expanded`."""
        if self.variant == "binned":
            return v[..., None]
        return torch.cat([v[..., None], soft_bin_targets(v, self.n_bins)], -1)

    def _embed(self, z: torch.Tensor, start: int) -> torch.Tensor:
        p = z.shape[1]
        return self.drop(self.embed(z, start) + self.position[start : start + p])

    def _label(self, y: torch.Tensor) -> torch.Tensor:
        """The label token [b, 1, token]: 2y - 1 in every slot."""
        width = 1 if self.variant == "binned" else 1 + self.n_bins
        return (2 * y - 1)[:, None, None].expand(-1, 1, width)

    def tokens(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """[y, x_1..x_j] -> embeddings."""
        return self._embed(torch.cat([self._label(y), self._token(x)], 1), 0)

    def _head(self, h: torch.Tensor, start: int = 0) -> torch.Tensor:
        return self.head(h) if self.variant == "binned" else self.head(h, start)

    def encode(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.transformer.encoder(self.tokens(y, x))

    def decode(self, memory: torch.Tensor, y_plus: torch.Tensor, prefix: torch.Tensor):
        """Logits [b, j+1, n_bins] for features 1..j+1 of x+ given its first j features."""
        tgt = self.tokens(y_plus, prefix)
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=tgt.device)
        return self._head(self.transformer.decoder(tgt, memory, tgt_mask=mask, tgt_is_causal=True))

    def loss(self, x, y, x_plus, y_plus) -> torch.Tensor:
        """Per-pair cross-entropy against soft bin targets, summed over the d features."""
        logits = self.decode(self.encode(x, y), y_plus, x_plus)[:, : self.d]
        target = soft_bin_targets(x_plus, self.n_bins)
        return -(target * logits.log_softmax(-1)).sum((-1, -2))

    def _decode_step(self, token: torch.Tensor, memory_kv, cache: list) -> torch.Tensor:
        """One new decoder position through every (post-norm) layer; `cache[i]` holds layer
        i's keys and values of the earlier positions and is extended in place."""
        x = token
        for i, layer in enumerate(self.transformer.decoder.layers):
            k, v = _keys_values(layer.self_attn, x)
            if cache[i] is not None:
                k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
            cache[i] = (k, v)
            x = layer.norm1(x + _attend(layer.self_attn, x, k, v))
            x = layer.norm2(x + _attend(layer.multihead_attn, x, *memory_kv[i]))
            x = layer.norm3(x + layer.linear2(layer.activation(layer.linear1(x))))
        return self.transformer.decoder.norm(x)

    def _memory_kv(self, memory: torch.Tensor) -> list:
        return [
            _keys_values(layer.multihead_attn, memory) for layer in self.transformer.decoder.layers
        ]

    def step_logits(self, memory: torch.Tensor, y_plus: torch.Tensor, x_plus: torch.Tensor):
        """decode(memory, y_plus, x_plus) computed one position at a time with the cache
        (teacher forcing); equal to decode up to float rounding."""
        memory_kv, cache = self._memory_kv(memory), [None] * len(self.transformer.decoder.layers)
        tokens = [self._label(y_plus)] + [
            self._token(x_plus[:, j : j + 1]) for j in range(x_plus.shape[1])
        ]
        out = [
            self._head(self._decode_step(self._embed(t, j), memory_kv, cache), j)
            for j, t in enumerate(tokens)
        ]
        return torch.cat(out, 1)

    @torch.no_grad()
    def sample(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        y_plus: torch.Tensor,
        temperature: float,
        generator: torch.Generator | None = None,
        kv_cache: bool = True,
    ) -> torch.Tensor:
        """Autoregressive ancestral sampling; logits are multiplied by the temperature."""
        memory = self.encode(x, y)
        edges = bin_edges(self.n_bins).to(x)
        out = x.new_zeros(len(x), 0)
        if kv_cache:
            memory_kv, cache = (
                self._memory_kv(memory),
                [None] * len(self.transformer.decoder.layers),
            )
            token = self._embed(self._label(y_plus), 0)
        for j in range(self.d):
            if kv_cache:
                logits = self._head(self._decode_step(token, memory_kv, cache), j)[:, 0]
            else:
                logits = self.decode(memory, y_plus, out)[:, j]
            pick = torch.multinomial((logits * temperature).softmax(-1), 1, generator=generator)
            out = torch.cat([out, edges[pick]], 1)
            if kv_cache and j + 1 < self.d:
                token = self._embed(self._token(edges[pick]), j + 1)
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
    kv_cache: bool = True,
) -> torch.Tensor:
    """GenRe inference: best_k samples per negative (encoder label y+ = 1), projected, and the
    one h scores highest is returned (official recourse/genre.py)."""
    model.eval()
    rep = x.repeat_interleave(best_k, 0)
    ones = torch.ones(len(rep), device=x.device)
    samples = model.sample(rep, ones, ones, temperature, generator, kv_cache)
    cand = project(samples, rep, immutable, categorical).view(len(x), best_k, -1)
    best = h(cand).argmax(1)
    return cand[torch.arange(len(x)), best]
