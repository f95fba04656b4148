"""REGENT: the retrieval-augmented transformer and its interpolation with R&P.

Context (Sec. 3.2): the n retrieved demonstration tuples (s'_i, r'_i, a'_i), closest first,
followed by the query (s, r_prev). Distances are measured to the *first retrieved* state,
d_1 = 0 and d_query = ||s - s'_1||, then divided by the environment's p95 normaliser.

Interpolation (Eq. 2), with lambda = 10 and the R&P action a'_1 at every position:
  discrete:   p = e^{-lambda d} q_RP + (1 - e^{-lambda d}) softmax(f_theta),
              q_RP = (1 - d~) onehot(a'_1) + d~ uniform, d~ = clip(d, 0, 1);
  continuous: a = e^{-lambda d} a'_1 + L (1 - e^{-lambda d}) clamp(f_theta, -1, 1), L = 10 in the
              official code (MCNN's shifted "crazy ReLU" with beta = 0 is clamp to [-1, 1]).
Loss: MSE (continuous) or cross-entropy on the mixed probabilities (discrete; no second
softmax) over every context position.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .data import Demos
from .retrieval import distances_to_first


def context_distances(ctx_obs: np.ndarray, query: np.ndarray, normaliser: float) -> np.ndarray:
    """(B, n + 1) distances of each context state and of the query to the first retrieved state,
    divided by the p95 normaliser. ctx_obs: (B, n, d), query: (B, d)."""
    return distances_to_first(ctx_obs, query) / normaliser


def rp_distribution(first_action: torch.Tensor, dist: torch.Tensor, n_actions: int) -> torch.Tensor:
    """q_RP = (1 - d~) onehot(a'_1) + d~ uniform; first_action (B,), dist (B, L) -> (B, L, A)."""
    d = dist.clamp(0.0, 1.0).unsqueeze(-1)
    onehot = F.one_hot(first_action, n_actions).to(dist.dtype).unsqueeze(1)
    return (1.0 - d) * onehot + d / n_actions


def interpolate_discrete(
    logits: torch.Tensor, q_rp: torch.Tensor, exp_d: torch.Tensor
) -> torch.Tensor:
    """Mixed probabilities (Eq. 2, discrete); exp_d = e^{-lambda d}, shape (B, L)."""
    w = exp_d.unsqueeze(-1)
    return w * q_rp + (1.0 - w) * logits.softmax(-1)


def interpolate_continuous(
    raw: torch.Tensor, rp_action: torch.Tensor, exp_d: torch.Tensor, scale: float = 10.0
) -> torch.Tensor:
    """Mixed action (Eq. 2, continuous); raw (B, L, A), rp_action (B, A), exp_d (B, L)."""
    w = exp_d.unsqueeze(-1)
    return w * rp_action.unsqueeze(1) + scale * (1.0 - w) * raw.clamp(-1.0, 1.0)


def mixed_cross_entropy(
    probs: torch.Tensor, target: torch.Tensor, eps: float = 1e-9
) -> torch.Tensor:
    """Cross-entropy of already-mixed probabilities (clamped, no second softmax)."""
    logp = probs.clamp(eps, 1.0 - eps).log()
    return -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1).mean()


class RegentModel(nn.Module):
    """A small GPT-2-style causal transformer (pre-LayerNorm blocks, GELU, learned positions,
    built from torch.nn) over one token per context position.

    Token i embeds (s_i, r_i, a_{i-1}); the action head at token i predicts a_i. With causal
    attention this sees exactly what JAT's interleaved (s, r), a tokens see, at half the length.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        discrete: bool,
        d_model: int,
        n_layers: int,
        n_heads: int,
        max_len: int,
    ):
        super().__init__()
        self.obs_dim, self.act_dim, self.discrete = obs_dim, act_dim, discrete
        self.embed_obs = nn.Linear(obs_dim, d_model)
        self.embed_rew = nn.Linear(1, d_model)
        self.embed_act = nn.Embedding(act_dim, d_model) if discrete else nn.Linear(act_dim, d_model)
        self.start = nn.Parameter(torch.zeros(d_model))  # "no previous action" at position 1
        self.position = nn.Parameter(0.02 * torch.randn(max_len, d_model))
        block = nn.TransformerEncoderLayer(
            d_model,
            n_heads,
            4 * d_model,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(block, n_layers, enable_nested_tensor=False)
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, act_dim)

    def forward(self, obs: torch.Tensor, rew: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """obs (B, L, d), rew (B, L), act (B, L[, A]) the actions at positions 1..L (the last one,
        the query's, is never seen). Returns raw outputs f_theta (B, L, A)."""
        prev = self.embed_act(act[:, :-1])
        start = self.start.expand(obs.shape[0], 1, -1)
        length = obs.shape[1]
        if length > len(self.position):
            raise ValueError(f"context of {length} states exceeds the model's {len(self.position)}")
        tokens = (
            self.embed_obs(obs) + self.embed_rew(rew.unsqueeze(-1)) + torch.cat([start, prev], 1)
        )
        mask = nn.Transformer.generate_square_subsequent_mask(length, device=obs.device)
        hidden = self.blocks(tokens + self.position[:length], mask=mask, is_causal=True)
        return self.head(self.final_norm(hidden))

    def predict(
        self, batch: dict[str, torch.Tensor], interpolate: bool, lam: float, scale: float
    ) -> torch.Tensor:
        """Mixed probabilities (discrete) or actions (continuous) at every position."""
        raw = self(batch["obs"], batch["rew"], batch["act"])
        if not interpolate:
            return raw.softmax(-1) if self.discrete else raw
        exp_d = torch.exp(-lam * batch["dist"])
        first = batch["act"][:, 0]
        if self.discrete:
            return interpolate_discrete(
                raw, rp_distribution(first, batch["dist"], self.act_dim), exp_d
            )
        return interpolate_continuous(raw, first, exp_d, scale)

    def loss(self, batch: dict[str, torch.Tensor], interpolate: bool, lam: float, scale: float):
        """Loss over all context positions (and the query, whose action is known in pretraining)."""
        out = self.predict(batch, interpolate, lam, scale)
        if self.discrete:
            return mixed_cross_entropy(out, batch["act"])
        return F.mse_loss(out, batch["act"])


def build_context(
    demos: Demos,
    idx: np.ndarray,
    query_obs: np.ndarray,
    query_rew: np.ndarray,
    query_act: np.ndarray | None,
    normaliser: float,
) -> dict[str, torch.Tensor]:
    """Tensors for a batch of contexts: rows idx (B, n) of demos, closest first, then the query.
    query_act is the known action in pretraining and a placeholder (zeros) at evaluation."""
    ctx_obs = demos.obs[idx]
    b = len(idx)
    if query_act is None:
        query_act = (
            np.zeros((b,), np.int64)
            if demos.discrete
            else np.zeros((b, demos.act.shape[1]), np.float32)
        )
    obs = np.concatenate([ctx_obs, query_obs[:, None]], axis=1)
    rew = np.concatenate([demos.rew[idx], query_rew[:, None]], axis=1)
    act = np.concatenate([demos.act[idx], query_act[:, None]], axis=1)
    dist = context_distances(ctx_obs, query_obs, normaliser)
    return {
        "obs": torch.as_tensor(obs, dtype=torch.float32),
        "rew": torch.as_tensor(rew, dtype=torch.float32),
        "act": torch.as_tensor(act),
        "dist": torch.as_tensor(dist, dtype=torch.float32),
    }
