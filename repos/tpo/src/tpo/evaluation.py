"""Evaluation: greedy accuracy, and ranking quality of the implicit reward on held-out trees."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
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
    responses = [r for t in trees for r in t.response_units()]
    scores = torch.tensor([t.scores for t in trees], dtype=torch.float32, device=device)
    return encode_pairs(tok, prompts, responses).to(device), scores


def step_logps(
    model: torch.nn.Module, batch: Batch, hidden: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Response log-probs summed per step (rows, K) and, if asked, the step-mean last-layer hidden
    states (rows, K, d). K = 1 + the largest step index in the batch; the steps sum to log pi(y|x)."""
    logps, states = forward(model, batch, hidden)
    sid = batch.step_ids[:, 1:]
    k = int(sid.max()) + 1
    return step_sums(logps, sid, k), step_means(states, sid, k) if hidden else None


def same_size_chunks(trees: list[Tree], chunk: int) -> list[tuple[int, int]]:
    """[start, stop) runs of at most `chunk` consecutive trees with equal response counts."""
    runs, start = [], 0
    while start < len(trees):
        stop = start + 1
        n = len(trees[start].responses)
        while stop < min(len(trees), start + chunk) and len(trees[stop].responses) == n:
            stop += 1
        runs.append((start, stop))
        start = stop
    return runs


@torch.no_grad()
def reference_steps(
    ref: torch.nn.Module, tok: Tokenizer, trees: list[Tree], device: str, chunk: int = 64
) -> list[torch.Tensor]:
    """Per-step reference log-probs (N, K) of every tree, computed once: the reference is frozen,
    so preference training and evaluation reuse them instead of running it again each step."""
    out: list[torch.Tensor] = []
    for start, stop in same_size_chunks(trees, chunk):
        batch, scores = tree_batch(tok, trees[start:stop], device)
        sums, _ = step_logps(ref, batch)
        out.extend(sums.view(*scores.shape, -1).unbind(0))
    return out


def fit_steps(cached: list[torch.Tensor], k: int) -> torch.Tensor:
    """Stack cached (N, K_i) step tensors into (B*N, k): columns past a tree's last step are zero,
    so cutting or zero-padding them to the batch's k changes no sum."""
    rows = [t[:, :k] if t.shape[1] >= k else F.pad(t, (0, k - t.shape[1])) for t in cached]
    return torch.cat(rows, 0)


def step_counts(batch: Batch, k: int) -> torch.Tensor:
    """(rows, K): response tokens of each step (0 where the row lacks step k)."""
    return step_sums(batch.response_mask[:, 1:], batch.step_ids[:, 1:], k)


def step_validity(batch: Batch, k: int) -> torch.Tensor:
    """(rows, K) bool: response row holds step k."""
    return step_counts(batch, k) > 0


@torch.no_grad()
def implicit_rewards(
    policy: torch.nn.Module,
    tok: Tokenizer,
    trees: list[Tree],
    ref_steps: list[torch.Tensor],
    beta: float,
    chunk: int = 64,
) -> list[np.ndarray]:
    """r_i = beta * log pi(y_i|x) / pi_ref(y_i|x) for every response of every tree, with the
    reference's log-probs taken from `reference_steps`."""
    device = str(next(policy.parameters()).device)
    out: list[np.ndarray] = []
    for start, stop in same_size_chunks(trees, chunk):
        batch, scores = tree_batch(tok, trees[start:stop], device)
        sums, _ = step_logps(policy, batch)
        ref = fit_steps(ref_steps[start:stop], sums.shape[1])
        rewards = beta * (sums - ref).sum(-1).view(scores.shape)
        out.extend(rewards.cpu().numpy())
    return out


def ranking_per_tree(rewards: list[np.ndarray], trees: list[Tree]) -> dict[str, np.ndarray]:
    """Per held-out tree: NDCG@N (gain 2^v - 1, sklearn) and Kendall tau-b (scipy) between
    implicit rewards and judge scores, and the sibling margin, the mean r_i - r_j over pairs
    v_i > v_j whose responses share at least the first gold step (NaN: the tree has none)."""
    ndcg, tau, margins = [], [], []
    for r, tree in zip(rewards, trees, strict=True):
        v = np.asarray(tree.scores, dtype=float)
        g = gains(torch.tensor(v)).numpy()
        ndcg.append(ndcg_score(g[None], r[None]))
        t = kendalltau(r, v).statistic
        tau.append(0.0 if np.isnan(t) else float(t))
        shared = tree.prefix_steps or [0] * len(v)
        pairs = [
            float(r[i] - r[j])
            for i in range(len(v))
            for j in range(len(v))
            if v[i] > v[j] and min(shared[i], shared[j]) >= 1
        ]
        margins.append(float(np.mean(pairs)) if pairs else float("nan"))
    return {
        "ndcg": np.array(ndcg),
        "kendall_tau": np.array(tau),
        "sibling_margin": np.array(margins),
    }


def ranking_quality(rewards: list[np.ndarray], trees: list[Tree]) -> dict[str, float]:
    """Means over trees of `ranking_per_tree` (the sibling margin over trees that have pairs)."""
    per_tree = ranking_per_tree(rewards, trees)
    margins = per_tree["sibling_margin"][np.isfinite(per_tree["sibling_margin"])]
    return {
        "ndcg": float(per_tree["ndcg"].mean()),
        "kendall_tau": float(per_tree["kendall_tau"].mean()),
        "sibling_margin": float(margins.mean()) if margins.size else 0.0,
    }


def greedy_hits(model: torch.nn.Module, tok: Tokenizer, probs: list[Problem]) -> np.ndarray:
    """1.0 for each problem whose greedy answer is the true final value, else 0.0."""
    contexts = [[tok.bos] + tok.encode(p.prompt()) for p in probs]
    longest = max(len(p.steps) for p in probs)
    outs = generate(model, tok, contexts, 6 * longest + 4, temperature=0.0)
    return np.array(
        [
            float(split_steps(tok.decode(o))[1] == str(p.values()[-1]))
            for o, p in zip(outs, probs, strict=True)
        ]
    )


def greedy_accuracy(model: torch.nn.Module, tok: Tokenizer, probs: list[Problem]) -> float:
    """Share of problems whose greedy answer is the true final value."""
    return float(greedy_hits(model, tok, probs).mean())
