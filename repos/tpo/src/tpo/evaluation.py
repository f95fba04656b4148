"""Evaluation: greedy accuracy, and ranking quality of the implicit reward on held-out trees."""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import kendalltau
from sklearn.metrics import ndcg_score

from .data import Problem, Tokenizer, Tree, split_steps
from .policy import Batch, encode_pairs, forward, generate
from .tree_loss import gains, step_means, step_sums


def tree_batch(tok: Tokenizer, trees: list[Tree], device: str) -> tuple[Batch, torch.Tensor]:
    """Flatten B trees of N responses into B*N (prompt, response) rows and a (B, N) score tensor."""
    n = len(trees[0].responses)
    if any(len(t.responses) != n for t in trees):
        raise ValueError("trees in one batch must hold the same number of responses")
    prompts = [t.prompt for t in trees for _ in range(n)]
    responses = [r for t in trees for r in t.responses]
    scores = torch.tensor([t.scores for t in trees], dtype=torch.float32, device=device)
    return encode_pairs(tok, prompts, responses).to(device), scores


def log_ratios(
    policy: torch.nn.Module, ref: torch.nn.Module, batch: Batch, hidden: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log pi/pi_ref of response tokens (rows, L-1), and the policy's hidden states."""
    logps, states = forward(policy, batch, hidden)
    with torch.no_grad():
        ref_logps, _ = forward(ref, batch)
    return logps - ref_logps, states


def per_step(
    ratio: torch.Tensor, states: torch.Tensor, batch: Batch, b: int, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Step log-ratios (B, N, K), step-mean hidden states (B, N, K, d), step validity (B, N, K)."""
    sid = batch.step_ids[:, 1:]
    k = int(sid.max()) + 1
    valid = step_sums(batch.response_mask[:, 1:], sid, k) > 0
    return (
        step_sums(ratio, sid, k).view(b, n, k),
        step_means(states, sid, k).view(b, n, k, -1),
        valid.view(b, n, k),
    )


@torch.no_grad()
def implicit_rewards(
    policy: torch.nn.Module, ref: torch.nn.Module, tok: Tokenizer, trees: list[Tree], beta: float
) -> list[np.ndarray]:
    device = str(next(policy.parameters()).device)
    out = []
    for tree in trees:
        batch, _ = tree_batch(tok, [tree], device)
        ratio, _ = log_ratios(policy, ref, batch)
        out.append((beta * ratio.sum(-1)).cpu().numpy())
    return out


def ranking_quality(rewards: list[np.ndarray], trees: list[Tree]) -> dict[str, float]:
    """NDCG@N (gain 2^v - 1, sklearn) and Kendall tau-b (scipy) between implicit rewards and
    judge scores, averaged over trees; sibling margin: mean r_i - r_j over pairs v_i > v_j whose
    responses share at least the first gold step."""
    ndcg, tau, margins = [], [], []
    for r, tree in zip(rewards, trees, strict=True):
        v = np.asarray(tree.scores, dtype=float)
        g = gains(torch.tensor(v)).numpy()
        ndcg.append(ndcg_score(g[None], r[None]))
        t = kendalltau(r, v).statistic
        tau.append(0.0 if np.isnan(t) else float(t))
        shared = tree.prefix_steps or [0] * len(v)
        for i in range(len(v)):
            for j in range(len(v)):
                if v[i] > v[j] and min(shared[i], shared[j]) >= 1:
                    margins.append(float(r[i] - r[j]))
    return {
        "ndcg": float(np.mean(ndcg)),
        "kendall_tau": float(np.mean(tau)),
        "sibling_margin": float(np.mean(margins)) if margins else 0.0,
    }


def greedy_accuracy(model: torch.nn.Module, tok: Tokenizer, probs: list[Problem]) -> float:
    """Share of problems whose greedy answer is the true final value."""
    contexts = [[tok.bos] + tok.encode(p.prompt()) for p in probs]
    longest = max(len(p.steps) for p in probs)
    outs = generate(model, tok, contexts, 6 * longest + 4, temperature=0.0)
    hits = [
        split_steps(tok.decode(o))[1] == str(p.values()[-1])
        for o, p in zip(outs, probs, strict=True)
    ]
    return float(np.mean(hits))
