"""The Generative Spatial Transformer: a LLaMA-style decoder over [o][special][x][y] sequences.

Official `autoregressive/models/gpt.py` facts kept: RMSNorm, SwiGLU, query/key LayerNorm, token /
residual / feed-forward dropout, zero-initialised output head, and a 2-D rotary embedding over the
token grid repeated identically for every segment. Differences (README, Deviations): the special
token's rotary entry is the identity (official (cos, sin) = (1, 1) is not a rotation), and a
learned segment-type embedding tells the observation and target image segments apart.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

# segment types: observation image, special token, camera, target image
SEG_OBS, SEG_SPECIAL, SEG_CAMERA, SEG_TARGET = 0, 1, 2, 3


def rope_2d_angles(grid: int, head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """Rotation angles (grid*grid, head_dim/2): first half by row index, second by column."""
    if head_dim % 4:
        raise ValueError(f"head_dim must be divisible by 4 for 2-D rotary, got {head_dim}")
    quarter = head_dim // 4
    freqs = base ** (-torch.arange(quarter, dtype=torch.float64) / quarter)
    rows, cols = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    ang = torch.cat([rows.reshape(-1, 1) * freqs, cols.reshape(-1, 1) * freqs], dim=-1)
    return ang.float()


def sequence_angles(grid: int, head_dim: int, n_segments: int = 3) -> torch.Tensor:
    """Angles for [seg][special][seg][seg]: the grid table repeated, the special token at 0."""
    table = rope_2d_angles(grid, head_dim)
    zero = torch.zeros(1, head_dim // 2)
    return torch.cat([table, zero] + [table] * (n_segments - 1), dim=0)


def apply_rotary(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x_i, x_{i+h/2}) by angles; x: (B, H, T, D), angles: (T, D/2)."""
    cos, sin = torch.cos(angles), torch.sin(angles)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Attention(nn.Module):
    def __init__(self, width: int, heads: int, dropout: float, qk_norm: bool):
        super().__init__()
        self.heads, self.head_dim = heads, width // heads
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.out = nn.Linear(width, width, bias=False)
        self.q_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, angles, cache=None):
        b, t, w = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = apply_rotary(self.q_norm(q), angles), apply_rotary(self.k_norm(k), angles)
        if cache is not None:
            if cache:
                k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
            cache[:] = [k, v]
        # queries are the last t positions; causal within them, full view of the cached past
        causal = t > 1
        if causal and k.shape[2] != t:
            mask = torch.ones(t, k.shape[2], dtype=torch.bool).tril(k.shape[2] - t)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.dropout(self.out(y.transpose(1, 2).reshape(b, t, w)))


class SwiGLU(nn.Module):
    def __init__(self, width: int, dropout: float):
        super().__init__()
        hidden = int(8 * width / 3)
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.down(F.silu(self.gate(x)) * self.up(x)))


class Block(nn.Module):
    def __init__(self, width: int, heads: int, dropout: float, qk_norm: bool):
        super().__init__()
        self.norm1, self.norm2 = nn.RMSNorm(width, eps=1e-5), nn.RMSNorm(width, eps=1e-5)
        self.attn = Attention(width, heads, dropout, qk_norm)
        self.mlp = SwiGLU(width, dropout)

    def forward(self, x, angles, cache=None):
        x = x + self.attn(self.norm1(x), angles, cache)
        return x + self.mlp(self.norm2(x))


class GST(nn.Module):
    """Decoder-only transformer over the shared vocabulary; `forward` returns next-token logits."""

    def __init__(
        self,
        vocab_size: int,
        width: int,
        depth: int,
        heads: int,
        grid: int,
        dropout: float = 0.1,
        qk_norm: bool = True,
    ):
        super().__init__()
        if width % heads:
            raise ValueError(f"width {width} must be divisible by heads {heads}")
        self.tok = nn.Embedding(vocab_size, width)
        self.seg = nn.Embedding(4, width)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(width, heads, dropout, qk_norm) for _ in range(depth))
        self.norm = nn.RMSNorm(width, eps=1e-5)
        self.head = nn.Linear(width, vocab_size, bias=False)
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.seg.weight, std=0.02)
        for blk in self.blocks:
            nn.init.normal_(blk.attn.out.weight, std=0.02 / math.sqrt(2 * depth))
            nn.init.normal_(blk.mlp.down.weight, std=0.02 / math.sqrt(2 * depth))
        nn.init.zeros_(self.head.weight)
        self.register_buffer("angles", sequence_angles(grid, width // heads), persistent=False)

    def forward(self, tokens, segments, start: int = 0, caches=None, logits_from: int = 0):
        """tokens, segments: (B, T) for sequence positions start..start+T-1 -> logits
        (B, T - logits_from, vocab) of the positions from `logits_from` on (training skips the
        output head where no loss is taken: the observation segment predicts nothing)."""
        t = tokens.shape[1]
        if start + t > self.angles.shape[0]:
            raise ValueError(f"sequence of {start + t} tokens exceeds {self.angles.shape[0]}")
        x = self.drop(self.tok(tokens) + self.seg(segments))
        ang = self.angles[start : start + t]
        for i, blk in enumerate(self.blocks):
            x = blk(x, ang, None if caches is None else caches[i])
        return self.head(self.norm(x[:, logits_from:]))

    @torch.no_grad()
    def sample(
        self,
        prefix,
        prefix_seg,
        n_new: int,
        new_seg: int,
        allowed: torch.Tensor,
        generator: torch.Generator,
        temperature: float = 1.0,
        top_k: int = 0,
    ):
        """Sample `n_new` tokens after `prefix` with KV caching; logits outside `allowed`
        (the slot's sub-vocabulary, bool (vocab,)) are masked to -inf before top-k sampling."""
        b, t0 = prefix.shape
        caches = [[] for _ in self.blocks]
        logits = self(prefix, prefix_seg, 0, caches)[:, -1]
        seg = torch.full((b, 1), new_seg, dtype=torch.long, device=prefix.device)
        out = []
        for i in range(n_new):
            logits = logits.masked_fill(~allowed, float("-inf")) / max(temperature, 1e-6)
            if top_k:
                kth = logits.topk(min(top_k, int(allowed.sum())), dim=-1).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            nxt = torch.multinomial(logits.softmax(-1), 1, generator=generator)
            out.append(nxt)
            if i + 1 < n_new:
                logits = self(nxt, seg, t0 + i, caches)[:, -1]
        return torch.cat(out, dim=1)
