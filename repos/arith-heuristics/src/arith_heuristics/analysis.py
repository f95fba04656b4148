"""The paper's analysis pipeline for one operator: circuit, neurons, heuristics, knockouts."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import nn

from . import heuristics as H
from . import knockout as K
from . import patching as P
from .config import OPERATORS, Config
from .data import Prompts, Vocab, all_legal, apply, counterfactuals, legal_grid
from .lm import predict
from .model import Parts, cache, unembedding, value_vectors


@dataclasses.dataclass
class Context:
    """What every operator's analysis shares: the model, its hook points and mean activations."""

    model: nn.Module
    parts: Parts
    vocab: Vocab
    cfg: Config
    layers: list[int]
    correct: Prompts
    legal: Prompts
    mlp_means: list[torch.Tensor]
    attn_means: list[torch.Tensor]


def make_context(model: nn.Module, parts: Parts, vocab: Vocab, cfg: Config, seed: int) -> Context:
    """Correct prompts and mean activations over all legal prompts, balanced across operators."""
    legal = all_legal(OPERATORS, cfg.max_operand, cfg.n_numbers)
    pred = predict(model, legal, vocab, cfg.device)
    rng = np.random.default_rng(seed)
    per_op = min(int((legal.ops == k).sum()) for k in range(len(OPERATORS)))
    balanced = np.concatenate(
        [rng.choice(np.nonzero(legal.ops == k)[0], per_op, replace=False) for k in range(4)]
    )
    tokens = legal.subset(balanced).tokens(vocab).to(cfg.device)
    acts = cache(model, parts, tokens)
    layers = list(range(min(cfg.first_heuristics_layer, parts.n_layer - 1), parts.n_layer))
    return Context(
        model,
        parts,
        vocab,
        cfg,
        layers,
        legal.subset(np.nonzero(pred == legal.result)[0]),
        legal,
        [x.mean(0) for x in acts["mlp"]],
        [x.mean(0) for x in acts["attn"]],
    )


def activation_maps(ctx: Context, operator: str) -> tuple[np.ndarray, np.ndarray]:
    """Activation maps A [layers, d_mlp, G, G] at the last position over the whole operand
    grid, and logit-lens maps L of each neuron for the grid's result tokens."""
    g, n = ctx.cfg.max_operand, ctx.cfg.n_numbers
    a, b = np.meshgrid(np.arange(g), np.arange(g), indexing="ij")
    k = np.full(g * g, OPERATORS.index(operator))
    res = np.clip(apply(operator, a, b), 0, n - 1).ravel()
    grid = Prompts(a.ravel(), b.ravel(), k, res)
    acts = cache(ctx.model, ctx.parts, grid.tokens(ctx.vocab).to(ctx.cfg.device))["mlp"]
    w_u = unembedding(ctx.model)[: ctx.vocab.n_numbers]
    amap, lmap = [], []
    with torch.no_grad():
        for layer in ctx.layers:
            amap.append(acts[layer][:, -1, :].T.reshape(-1, g, g).cpu().numpy())
            lens = value_vectors(ctx.parts.mlp_out[layer]) @ w_u.T  # [d_mlp, n_numbers]
            lmap.append(lens[:, torch.as_tensor(res)].reshape(-1, g, g).cpu().numpy())
    return np.stack(amap), np.stack(lmap)


def operator_pool(ctx: Context, k: int) -> tuple[Prompts, bool]:
    """The correctly solved prompts of operator k; all its legal prompts when the model solves
    too few to form counterfactual pairs (an almost untrained model)."""
    pool = ctx.correct.subset(np.nonzero(ctx.correct.ops == k)[0])
    if len(np.unique(pool.result)) >= 2:
        return pool, True
    return ctx.legal.subset(np.nonzero(ctx.legal.ops == k)[0]), False


def analyse_operator(ctx: Context, operator: str, seed: int) -> dict:
    """Circuit, neuron effects (exact and attribution), faithfulness curve, heuristic
    classification and both knockouts for one operator; returns metrics and artefacts."""
    cfg, model, parts, nn_ = ctx.cfg, ctx.model, ctx.parts, ctx.cfg.n_numbers
    k = OPERATORS.index(operator)
    rng = np.random.default_rng(seed)
    pool, on_correct = operator_pool(ctx, k)
    clean = pool.subset(
        np.sort(rng.choice(len(pool), min(cfg.n_prompts, len(pool)), replace=False))
    )
    cf = counterfactuals(clean, pool, seed)
    tok, tok_cf = clean.tokens(ctx.vocab).to(cfg.device), cf.tokens(ctx.vocab).to(cfg.device)
    r, r_cf = torch.as_tensor(clean.result), torch.as_tensor(cf.result)
    cf_cache = cache(model, parts, tok_cf)

    comp = P.component_effects(model, parts, tok, cf_cache, r, r_cf, nn_)
    heads = comp["heads"] >= cfg.head_effect_frac * comp["heads"].max().clamp_min(1e-9)
    nl_full = P.nl_with_heads(model, parts, tok, r, torch.ones_like(heads), ctx.attn_means, nn_)
    nl_no_heads = P.nl_with_heads(
        model, parts, tok, r, torch.zeros_like(heads), ctx.attn_means, nn_
    )
    nl_heads = P.nl_with_heads(model, parts, tok, r, heads, ctx.attn_means, nn_)

    exact = P.neuron_effects(model, parts, ctx.layers, tok, cf_cache, r, r_cf, nn_)
    attrib = P.attribution_effects(model, parts, ctx.layers, tok, cf_cache, r, r_cf, nn_)
    corr = float(np.corrcoef(exact.ravel().numpy(), attrib.ravel().numpy())[0, 1])

    def keep_top(frac: float) -> dict[int, torch.Tensor]:
        n_keep = max(1, round(frac * parts.d_mlp))
        out = {}
        for li, layer in enumerate(ctx.layers):
            m = torch.zeros(parts.d_mlp, dtype=torch.bool)
            m[exact[li].topk(n_keep).indices] = True
            out[layer] = m
        return out

    none = {layer: torch.zeros(parts.d_mlp, dtype=torch.bool) for layer in ctx.layers}
    nl_empty = P.nl_with_neurons(model, parts, tok, r, none, ctx.mlp_means, nn_)
    faith_curve = [
        P.faithfulness(
            P.nl_with_neurons(model, parts, tok, r, keep_top(f), ctx.mlp_means, nn_),
            nl_empty,
            nl_full,
        )
        for f in cfg.faith_fracs
    ]

    # Algorithm 1 on the top neurons of each late layer
    top = keep_top(cfg.top_frac)
    legal = legal_grid(operator, cfg.max_operand, cfg.n_numbers)
    heur, top_ids, scores, implements, a_sel, l_sel = classify_top(ctx, operator, top)
    classified = float(np.mean([len(x) > 0 for x in implements]))
    rand_scores = H.score_all(rng.standard_normal(a_sel.shape), l_sel, heur, legal)
    rand_classified = float(np.mean([len(x) > 0 for x in H.classify(rand_scores, cfg.threshold)]))

    # heuristic knockouts: associated vs unassociated correct prompts
    heur_neurons: dict[int, list[tuple[int, int]]] = {}
    for (li, n), hs in zip(top_ids, implements, strict=True):
        for j in hs:
            heur_neurons.setdefault(int(j), []).append((ctx.layers[li], n))
    ko_assoc, ko_other = [], []
    in_pool = heur_mask_lookup(pool)
    for j, neurons in heur_neurons.items():
        if len(neurons) < cfg.min_heuristic_neurons:
            continue
        assoc = in_pool(heur[j].mask)
        a_idx, o_idx = np.nonzero(assoc)[0], np.nonzero(~assoc)[0]
        if not len(a_idx) or not len(o_idx):
            continue
        a_idx = rng.choice(a_idx, min(cfg.knockout_prompts, len(a_idx)), replace=False)
        o_idx = rng.choice(o_idx, min(cfg.knockout_prompts, len(o_idx)), replace=False)
        pa, po = pool.subset(a_idx), pool.subset(o_idx)
        acc_a, acc_o = K.heuristic_knockout(
            model,
            parts,
            neurons,
            pa.tokens(ctx.vocab),
            pa.result,
            po.tokens(ctx.vocab),
            po.result,
            nn_,
        )
        ko_assoc.append(acc_a)
        ko_other.append(acc_o)

    # prompt-level knockouts: a prompt's heuristic neurons (by score) vs as many random ones
    rel = np.zeros((len(clean), len(ctx.layers), parts.d_mlp))
    for t, (li, n) in enumerate(top_ids):
        for j in implements[t]:
            hit = heur[j].mask[clean.op1, clean.op2]
            rel[hit, li, n] = np.maximum(rel[hit, li, n], scores[t, j])
    pools = [
        np.array([n for li2, n in top_ids if li2 == li and implements[top_ids.index((li, n))]])
        for li in range(len(ctx.layers))
    ]
    guided_acc, random_acc = [], []
    for count in cfg.knockout_counts:
        g_masks = K.prompt_masks(rel, count, ctx.layers, parts.d_mlp)
        r_masks = K.random_masks(pools, g_masks, ctx.layers, seed + count)
        guided_acc.append(
            float(K.accuracy_with_ablation(model, parts, tok, clean.result, g_masks, nn_).mean())
        )
        random_acc.append(
            float(K.accuracy_with_ablation(model, parts, tok, clean.result, r_masks, nn_).mean())
        )

    pairs = {
        (ctx.layers[li], n, heur[j].name)
        for (li, n), hs in zip(top_ids, implements, strict=True)
        for j in hs
    }
    return {
        "metrics": {
            "analysed_on_correct": float(on_correct),
            "circuit_heads": float(heads.sum()),
            "circuit_faithfulness": P.faithfulness(nl_heads, nl_no_heads, nl_full),
            "faithfulness_at_top_frac": faith_curve[cfg.faith_fracs.index(cfg.top_frac)]
            if cfg.top_frac in cfg.faith_fracs
            else P.faithfulness(
                P.nl_with_neurons(model, parts, tok, r, top, ctx.mlp_means, nn_), nl_empty, nl_full
            ),
            "random_faithfulness_at_top_frac": P.faithfulness(
                P.nl_with_neurons(model, parts, tok, r, random_keep(top, rng), ctx.mlp_means, nn_),
                nl_empty,
                nl_full,
            ),
            "classified_share": classified,
            "random_map_classified_share": rand_classified,
            "attribution_exact_corr": corr,
            "n_knockout_heuristics": float(len(ko_assoc)),
            "knockout_assoc_acc": float(np.mean(ko_assoc)) if ko_assoc else float("nan"),
            "knockout_unassoc_acc": float(np.mean(ko_other)) if ko_other else float("nan"),
        },
        "faith_curve": faith_curve,
        "guided_acc": guided_acc,
        "random_acc": random_acc,
        "mlp_effects": comp["mlps"].tolist(),
        "head_effects": comp["heads"].tolist(),
        "pairs": pairs,
        "top_neurons": {(ctx.layers[li], n) for li, n in top_ids},
        "type_counts": type_counts(heur, implements),
        "clean": clean,
        "cf": cf,
    }


def classify_top(ctx: Context, operator: str, top: dict[int, torch.Tensor]):
    """Algorithm 1 over the neurons marked in `top`: heuristics, (layer index, neuron) ids,
    scores [neurons, heuristics], implemented heuristics per neuron, and the maps used."""
    cfg = ctx.cfg
    amap, lmap = activation_maps(ctx, operator)
    legal = legal_grid(operator, cfg.max_operand, cfg.n_numbers)
    heur = H.heuristics_for(operator, cfg.max_operand, cfg.n_numbers, cfg.max_heuristic_share)
    top_ids = [
        (li, int(n)) for li, layer in enumerate(ctx.layers) for n in torch.nonzero(top[layer])[:, 0]
    ]
    a_sel = np.stack([amap[li, n] for li, n in top_ids])
    l_sel = np.stack([lmap[li, n] for li, n in top_ids])
    scores = H.score_all(a_sel, l_sel, heur, legal)
    return heur, top_ids, scores, H.classify(scores, cfg.threshold), a_sel, l_sel


def top_by_attribution(ctx: Context, clean: Prompts, cf: Prompts) -> dict[int, torch.Tensor]:
    """Top-`top_frac` neurons per late layer ranked by attribution patching (the fast proxy)."""
    cfg, v = ctx.cfg, ctx.vocab
    cf_cache = cache(ctx.model, ctx.parts, cf.tokens(v).to(cfg.device))
    attrib = P.attribution_effects(
        ctx.model,
        ctx.parts,
        ctx.layers,
        clean.tokens(v).to(cfg.device),
        cf_cache,
        torch.as_tensor(clean.result),
        torch.as_tensor(cf.result),
        cfg.n_numbers,
    )
    n_keep = max(1, round(cfg.top_frac * ctx.parts.d_mlp))
    out = {}
    for li, layer in enumerate(ctx.layers):
        m = torch.zeros(ctx.parts.d_mlp, dtype=torch.bool)
        m[attrib[li].topk(n_keep).indices] = True
        out[layer] = m
    return out


def heuristic_pairs(ctx: Context, operator: str, clean: Prompts, cf: Prompts) -> set:
    """(layer, neuron, heuristic) pairs among the attribution-top neurons of a model."""
    heur, top_ids, _, implements, _, _ = classify_top(
        ctx, operator, top_by_attribution(ctx, clean, cf)
    )
    return {
        (ctx.layers[li], n, heur[j].name)
        for (li, n), hs in zip(top_ids, implements, strict=True)
        for j in hs
    }


def random_keep(top: dict[int, torch.Tensor], rng: np.random.Generator) -> dict[int, torch.Tensor]:
    """As many neurons per layer as `top` keeps, drawn at random (the faithfulness baseline)."""
    out = {}
    for layer, mask in top.items():
        m = torch.zeros_like(mask)
        m[torch.as_tensor(rng.permutation(len(mask))[: int(mask.sum())])] = True
        out[layer] = m
    return out


def heur_mask_lookup(pool: Prompts):
    """A function mapping a heuristic's grid mask to a boolean vector over `pool`'s prompts."""
    return lambda mask: mask[pool.op1, pool.op2]


def type_counts(heur: list[H.Heuristic], implements: list[list[int]]) -> dict[str, int]:
    """How many (neuron, heuristic) pairs fall into each heuristic type."""
    counts: dict[str, int] = {}
    for hs in implements:
        for j in hs:
            name = heur[j].name
            kind = (
                "range"
                if "range" in name
                else "modulo"
                if "mod" in name
                else "pattern"
                if "pattern" in name
                else "identical"
            )
            counts[kind] = counts.get(kind, 0) + 1
    return counts
