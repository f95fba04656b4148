"""Circuit discovery and evaluation with the paper's protocol (Sec. 3, Eq. 1-2, Appendix A).

A circuit is a set of attention heads plus MLP neurons; everything outside it is mean-ablated
at every position, with means over every (op1, op, op2) prompt of all four operators, legal or
not (script_topk_neuron_eval.calc_mean_cache). The empty circuit ablates every component.
The neuron-level circuit is build_circuit's: the circuit heads, the full MLPs below
`first_heuristics_layer`, and the top neurons of every later MLP.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import nn

from . import patching as P
from .config import OPERATORS, Config
from .data import Prompts, Vocab, all_legal, counterfactuals
from .lm import predict
from .model import Parts


@dataclasses.dataclass
class Context:
    """What every operator's analysis of one model shares."""

    model: nn.Module
    parts: Parts
    vocab: Vocab
    cfg: Config
    layers: list[int]
    """MLP layers from `first_heuristics_layer` on (the neuron analysis)."""
    correct: Prompts
    legal: Prompts
    means: dict[str, list[torch.Tensor]] | None
    """Mean activations for mean ablation ({'mlp', 'attn'}: per layer [T, D])."""


def grid_prompts(max_operand: int) -> Prompts:
    """Every (op1, operator, op2) with operands below max_operand, legal or not (result -1)."""
    a, b = np.meshgrid(np.arange(max_operand), np.arange(max_operand), indexing="ij")
    n = a.size
    ops = np.repeat(np.arange(len(OPERATORS)), n)
    return Prompts(np.tile(a.ravel(), 4), np.tile(b.ravel(), 4), ops, np.full(4 * n, -1))


def make_context(
    model: nn.Module, parts: Parts, vocab: Vocab, cfg: Config, with_means: bool = True
) -> Context:
    """Correctly solved prompts, the late layers and (optionally) the mean-ablation cache."""
    legal = all_legal(OPERATORS, cfg.max_operand, cfg.n_numbers)
    pred = predict(model, legal, vocab, cfg.device)
    means = None
    if with_means:
        tokens = grid_prompts(cfg.max_operand).tokens(vocab).to(cfg.device)
        means = P.mean_activations(model, parts, tokens)
    layers = list(range(min(cfg.first_heuristics_layer, parts.n_layer - 1), parts.n_layer))
    correct = legal.subset(np.nonzero(pred == legal.result)[0])
    return Context(model, parts, vocab, cfg, layers, correct, legal, means)


def operator_pool(ctx: Context, k: int) -> tuple[Prompts, bool]:
    """The correctly solved prompts of operator k; all its legal prompts when the model solves
    too few to form counterfactual pairs (an untrained model)."""
    pool = ctx.correct.subset(np.nonzero(ctx.correct.ops == k)[0])
    if len(np.unique(pool.result)) >= 2 and len(pool) >= 4:
        return pool, True
    return ctx.legal.subset(np.nonzero(ctx.legal.ops == k)[0]), False


@dataclasses.dataclass
class Batch:
    """Clean prompts, their counterfactuals, tokens and answer ids."""

    clean: Prompts
    cf: Prompts
    tok: torch.Tensor
    tok_cf: torch.Tensor
    r: torch.Tensor
    r_cf: torch.Tensor


def make_batch(ctx: Context, clean: Prompts, pool: Prompts, seed: int) -> Batch:
    cf = counterfactuals(clean, pool, seed)
    dev, v = ctx.cfg.device, ctx.vocab
    return Batch(
        clean,
        cf,
        clean.tokens(v).to(dev),
        cf.tokens(v).to(dev),
        torch.as_tensor(clean.result, device=dev),
        torch.as_tensor(cf.result, device=dev),
    )


def split_prompts(ctx: Context, pool: Prompts, seed: int) -> tuple[Batch, Batch]:
    """Disjoint analysis and validation batches of up to n_prompts each (the validation batch
    only chooses the number of circuit heads)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pool))
    n = min(ctx.cfg.n_prompts, max(1, len(pool) // 2))
    test, val = np.sort(order[:n]), np.sort(order[n : 2 * n])
    if len(val) == 0:
        val = test
    return make_batch(ctx, pool.subset(test), pool, seed), make_batch(
        ctx, pool.subset(val), pool, seed + 1
    )


class Evaluator:
    """Faithfulness of circuits on one batch, with NL(M) and NL(empty) computed once."""

    def __init__(self, ctx: Context, batch: Batch):
        self.ctx, self.batch = ctx, batch
        self.nl_full = self.nl(P.Circuit.full(ctx.parts))
        self.nl_empty = self.nl(P.Circuit.empty(ctx.parts))

    def nl(self, circuit: P.Circuit) -> torch.Tensor:
        c = self.ctx
        return P.circuit_nl(c.model, c.parts, self.batch.tok, self.batch.r, circuit, c.means)

    def faithfulness(self, circuit: P.Circuit) -> dict[str, float]:
        return P.faithfulness_scores(self.nl(circuit), self.nl_empty, self.nl_full)


def heads_circuit(parts: Parts, order: torch.Tensor, k: int) -> P.Circuit:
    """The k heads first in `order` (flat layer*H + head indices) plus every MLP in full."""
    c = P.Circuit.full(parts)
    keep = torch.zeros(parts.n_layer * parts.n_head, dtype=torch.bool)
    keep[order[:k]] = True
    c.heads = keep.view(parts.n_layer, parts.n_head)
    return c


def head_sweep(ev: Evaluator, head_effects: torch.Tensor, target: float):
    """Faithfulness against the number of heads (heads added in order of E); the circuit is the
    smallest prefix reaching `target` (all heads when none does). Returns (k, order, curve)."""
    parts = ev.ctx.parts
    order = head_effects.flatten().argsort(descending=True)
    curve = [
        ev.faithfulness(heads_circuit(parts, order, k))["per_prompt"] for k in range(len(order) + 1)
    ]
    reached = [k for k, f in enumerate(curve) if f >= target]
    return (reached[0] if reached else len(order)), order, curve


def neuron_circuit(
    ctx: Context, heads: torch.Tensor, keep: dict[int, torch.Tensor] | None
) -> P.Circuit:
    """build_circuit: `heads`, full MLPs below the late layers, and per late layer the neurons
    marked in keep[layer] (all neurons when keep is None)."""
    c = P.Circuit.full(ctx.parts)
    c.heads = heads.clone()
    if keep is not None:
        for layer in ctx.layers:
            c.neurons[layer] = keep[layer]
    return c


def top_masks(scores: torch.Tensor, layers: list[int], frac: float) -> dict[int, torch.Tensor]:
    """Per late layer, the round(frac * d_mlp) neurons with the highest score ([layers, d_mlp])."""
    d = scores.shape[1]
    n_keep = max(1, round(frac * d))
    out = {}
    for li, layer in enumerate(layers):
        m = torch.zeros(d, dtype=torch.bool)
        m[scores[li].topk(n_keep).indices] = True
        out[layer] = m
    return out


def random_masks_like(
    masks: dict[int, torch.Tensor], rng: np.random.Generator
) -> dict[int, torch.Tensor]:
    """As many neurons per layer as `masks` keeps, drawn at random (the equal-size baseline)."""
    out = {}
    for layer, mask in masks.items():
        m = torch.zeros_like(mask)
        m[torch.as_tensor(rng.permutation(len(mask))[: int(mask.sum())])] = True
        out[layer] = m
    return out
