"""The paper's analysis of one operator: circuit, neurons, heuristics, knockouts, with nulls."""

from __future__ import annotations

import numpy as np
import torch

from . import circuit as C
from . import heuristics as H
from . import knockout as K
from . import patching as P
from .circuit import Batch, Context
from .config import OPERATORS
from .data import Prompts, apply, legal_grid
from .model import cache, unembedding, value_vectors


def activation_maps(ctx: Context, operator: str) -> tuple[np.ndarray, np.ndarray]:
    """Activation maps A [layers, d_mlp, G, G] at the last position over the whole operand
    grid, and logit-lens maps L of each neuron for the grid's result tokens."""
    g, n = ctx.cfg.max_operand, ctx.cfg.n_numbers
    a, b = np.meshgrid(np.arange(g), np.arange(g), indexing="ij")
    k = np.full(g * g, OPERATORS.index(operator))
    res = np.clip(apply(operator, a, b), 0, n - 1).ravel()
    grid = Prompts(a.ravel(), b.ravel(), k, res).tokens(ctx.vocab).to(ctx.cfg.device)
    # batches, keeping only the late layers' last position (the full grid at paper scale would
    # not fit in memory with every layer and position)
    last = {layer: [] for layer in ctx.layers}
    for start in range(0, len(grid), 4096):
        acts = cache(ctx.model, ctx.parts, grid[start : start + 4096])["mlp"]
        for layer in ctx.layers:
            last[layer].append(acts[layer][:, -1, :])
    w_u = unembedding(ctx.model)[: ctx.vocab.n_numbers]
    amap, lmap = [], []
    with torch.no_grad():
        for layer in ctx.layers:
            amap.append(torch.cat(last[layer]).T.reshape(-1, g, g).cpu().numpy())
            lens = value_vectors(ctx.parts.mlp_out[layer]) @ w_u.T  # [d_mlp, n_numbers]
            lmap.append(lens[:, torch.as_tensor(res)].reshape(-1, g, g).cpu().numpy())
    return np.stack(amap), np.stack(lmap)


class Classifier:
    """Algorithm 1 for one operator of one model: activation and logit-lens maps computed once."""

    def __init__(self, ctx: Context, operator: str):
        cfg = ctx.cfg
        self.ctx, self.threshold = ctx, cfg.threshold
        self.amap, self.lmap = activation_maps(ctx, operator)
        self.legal = legal_grid(operator, cfg.max_operand, cfg.n_numbers)
        args = (operator, cfg.max_operand, cfg.n_numbers, cfg.max_heuristic_share)
        self.heur = H.heuristics_for(*args)
        self.heur_official = H.heuristics_for(*args, k_rule="official")

    def run(
        self,
        masks: dict[int, torch.Tensor],
        random_maps: np.random.Generator | None = None,
        official: bool = False,
    ):
        """(ids, scores, implements) for the neurons marked in masks; ids are (layer index,
        neuron). With random_maps, Gaussian maps replace the activations (a floor); with
        official, heuristics take the official code's closed-form k (heuristics.official_k)."""
        ids = [
            (li, int(n))
            for li, layer in enumerate(self.ctx.layers)
            for n in torch.nonzero(masks[layer])[:, 0]
        ]
        a = np.stack([self.amap[li, n] for li, n in ids])
        if random_maps is not None:
            a = random_maps.standard_normal(a.shape)
        lens = np.stack([self.lmap[li, n] for li, n in ids])
        heur = self.heur_official if official else self.heur
        scores = H.score_all(a, lens, heur, self.legal)
        return ids, scores, H.classify(scores, self.threshold)

    def share(self, masks, random_maps=None, official: bool = False) -> float:
        """Share of the marked neurons that implement at least one heuristic."""
        implements = self.run(masks, random_maps, official)[2]
        return float(np.mean([len(x) > 0 for x in implements]))


def rank_neurons(ctx: Context, batch: Batch) -> torch.Tensor:
    """Exact per-neuron patching effect E at the last position, [late layers, d_mlp]."""
    cf_cache = cache(ctx.model, ctx.parts, batch.tok_cf)
    args = (ctx.model, ctx.parts, ctx.layers, batch.tok, cf_cache, batch.r, batch.r_cf)
    return P.neuron_effects(*args, ctx.cfg.n_numbers)


def classification_null(ctx: Context, operator: str, seed: int) -> dict[str, float]:
    """Top and bottom neurons of a model (e.g. the untrained one) through Algorithm 1."""
    pool, _ = C.operator_pool(ctx, OPERATORS.index(operator))
    batch, _ = C.split_prompts(ctx, pool, seed)
    exact = rank_neurons(ctx, batch)
    clf = Classifier(ctx, operator)
    top = C.top_masks(exact, ctx.layers, ctx.cfg.top_frac)
    bottom = C.top_masks(-exact.abs(), ctx.layers, ctx.cfg.top_frac)
    return {
        "classified_share": clf.share(top),
        "bottom_classified_share": clf.share(bottom),
        "classified_share_official": clf.share(top, official=True),
        "bottom_classified_share_official": clf.share(bottom, official=True),
    }


def heuristic_knockouts(ctx, pool, clf, ids, implements, rng) -> dict[str, float]:
    """Per heuristic with >= min_heuristic_neurons neurons: accuracy on associated and on
    unassociated prompts with its neurons zero-ablated, and with as many random late-layer
    neurons (same layers) ablated on the same prompts."""
    cfg, model, parts = ctx.cfg, ctx.model, ctx.parts
    by_heur: dict[int, list[tuple[int, int]]] = {}
    for (li, n), hs in zip(ids, implements, strict=True):
        for j in hs:
            by_heur.setdefault(int(j), []).append((ctx.layers[li], n))
    rows = []
    for j, neurons in sorted(by_heur.items()):
        if len(neurons) < cfg.min_heuristic_neurons:
            continue
        assoc = clf.heur[j].mask[pool.op1, pool.op2]
        a_idx, o_idx = np.nonzero(assoc)[0], np.nonzero(~assoc)[0]
        if not len(a_idx) or not len(o_idx):
            continue
        a_idx = rng.choice(a_idx, min(cfg.knockout_prompts, len(a_idx)), replace=False)
        o_idx = rng.choice(o_idx, min(cfg.knockout_prompts, len(o_idx)), replace=False)
        pa, po = pool.subset(a_idx), pool.subset(o_idx)
        sets = (pa.tokens(ctx.vocab), pa.result, po.tokens(ctx.vocab), po.result, cfg.n_numbers)
        heur = K.heuristic_knockout(model, parts, neurons, *sets)
        rand = K.heuristic_knockout(model, parts, K.random_like(neurons, parts.d_mlp, rng), *sets)
        rows.append((*heur, *rand))
    if not rows:
        nan = float("nan")
        return dict.fromkeys(("assoc", "unassoc", "random_assoc", "random_unassoc"), nan) | {
            "n": 0.0
        }
    m = np.mean(rows, axis=0)
    return {
        "assoc": m[0],
        "unassoc": m[1],
        "random_assoc": m[2],
        "random_unassoc": m[3],
        "n": float(len(rows)),
    }


def prompt_knockouts(ctx, batch, clf, ids, scores, implements, seed) -> dict[str, list[float]]:
    """Accuracy with each prompt's own heuristic neurons ablated (top `count` per layer by
    score), against as many random heuristic neurons, random late-layer neurons, and another
    prompt's heuristic neurons (the masks shuffled across prompts)."""
    parts, clean = ctx.parts, batch.clean
    rel = np.zeros((len(clean), len(ctx.layers), parts.d_mlp))
    for t, (li, n) in enumerate(ids):
        for j in implements[t]:
            hit = clf.heur[j].mask[clean.op1, clean.op2]
            rel[hit, li, n] = np.maximum(rel[hit, li, n], scores[t, j])
    classified = {(li, n) for (li, n), hs in zip(ids, implements, strict=True) if hs}
    heur_pools = [
        np.array([n for la, n in classified if la == li]) for li in range(len(ctx.layers))
    ]
    all_pools = [np.arange(parts.d_mlp)] * len(ctx.layers)
    perm = np.random.default_rng(seed).permutation(len(clean))
    out: dict[str, list[float]] = {"guided": [], "random": [], "random_any": [], "shuffled": []}

    def acc(masks):
        res = clean.result
        return float(
            K.accuracy_with_ablation(
                ctx.model, parts, batch.tok, res, masks, ctx.cfg.n_numbers
            ).mean()
        )

    for count in ctx.cfg.knockout_counts:
        guided = K.prompt_masks(rel, count, ctx.layers, parts.d_mlp)
        out["guided"].append(acc(guided))
        out["random"].append(acc(K.random_masks(heur_pools, guided, ctx.layers, seed + count)))
        out["random_any"].append(
            acc(K.random_masks(all_pools, guided, ctx.layers, seed + 7 * count))
        )
        out["shuffled"].append(acc({layer: m[perm] for layer, m in guided.items()}))
    return out


def analyse_operator(ctx: Context, operator: str, seed: int) -> dict:
    """Circuit (heads by the faithfulness sweep), neuron effects, faithfulness curves with the
    paper's protocol, Algorithm 1 on top / bottom / random-map neurons, both knockouts."""
    cfg, parts = ctx.cfg, ctx.parts
    rng = np.random.default_rng(seed)
    pool, on_correct = C.operator_pool(ctx, OPERATORS.index(operator))
    batch, val = C.split_prompts(ctx, pool, seed)
    cf_cache = cache(ctx.model, parts, batch.tok_cf)
    comp = P.component_effects(
        ctx.model, parts, batch.tok, cf_cache, batch.r, batch.r_cf, cfg.n_numbers
    )

    # heads: the faithfulness-vs-number-of-heads sweep on the validation prompts
    n_heads, order, sweep = C.head_sweep(
        C.Evaluator(ctx, val), comp["heads"], cfg.head_faith_target
    )
    heads = C.heads_circuit(parts, order, n_heads).heads
    ev = C.Evaluator(ctx, batch)
    head_f = ev.faithfulness(C.heads_circuit(parts, order, n_heads))

    exact = rank_neurons(ctx, batch)
    attrib = P.attribution_effects(
        ctx.model, parts, ctx.layers, batch.tok, cf_cache, batch.r, batch.r_cf, cfg.n_numbers
    )
    corr = float(np.corrcoef(exact.ravel().numpy(), attrib.ravel().numpy())[0, 1])

    all_heads = torch.ones_like(heads)
    curve, curve_means, curve_all_heads, curve_random = [], [], [], []
    for f in cfg.faith_fracs:
        top = C.top_masks(exact, ctx.layers, f)
        got = ev.faithfulness(C.neuron_circuit(ctx, heads, top))
        curve.append(got["per_prompt"])
        curve_means.append(got["of_means"])
        curve_all_heads.append(ev.faithfulness(C.neuron_circuit(ctx, all_heads, top))["per_prompt"])
        rand = C.random_masks_like(top, rng)
        curve_random.append(ev.faithfulness(C.neuron_circuit(ctx, heads, rand))["per_prompt"])

    # Algorithm 1: top neurons, the lowest-|E| neurons, and Gaussian maps for the top neurons
    clf = Classifier(ctx, operator)
    top = C.top_masks(exact, ctx.layers, cfg.top_frac)
    ids, scores, implements = clf.run(top)
    bottom = C.top_masks(-exact.abs(), ctx.layers, cfg.top_frac)

    ko = heuristic_knockouts(ctx, pool, clf, ids, implements, rng)
    pk = prompt_knockouts(ctx, batch, clf, ids, scores, implements, seed)
    pairs = {
        (ctx.layers[li], n, clf.heur[j].name)
        for (li, n), hs in zip(ids, implements, strict=True)
        for j in hs
    }
    counts: dict[str, int] = {}
    for hs in implements:
        for j in hs:
            counts[H.kind(clf.heur[j].name)] = counts.get(H.kind(clf.heur[j].name), 0) + 1
    return {
        "metrics": {
            "analysed_on_correct": float(on_correct),
            "circuit_heads": float(n_heads),
            "circuit_faithfulness": head_f["per_prompt"],
            "circuit_faithfulness_of_means": head_f["of_means"],
            "faith_excluded_prompts": head_f["excluded"],
            "classified_share": float(np.mean([len(x) > 0 for x in implements])),
            "bottom_classified_share": clf.share(bottom),
            "random_map_classified_share": clf.share(top, rng),
            "classified_share_official": clf.share(top, official=True),
            "bottom_classified_share_official": clf.share(bottom, official=True),
            "attribution_exact_corr": corr,
            "n_knockout_heuristics": ko["n"],
            "knockout_assoc_acc": ko["assoc"],
            "knockout_unassoc_acc": ko["unassoc"],
            "random_knockout_assoc_acc": ko["random_assoc"],
            "random_knockout_unassoc_acc": ko["random_unassoc"],
        },
        "curves": {
            "faith_curve": curve,
            "faith_curve_of_means": curve_means,
            "faith_curve_all_heads": curve_all_heads,
            "random_faith_curve": curve_random,
            "guided_acc": pk["guided"],
            "random_acc": pk["random"],
            "random_any_acc": pk["random_any"],
            "shuffled_acc": pk["shuffled"],
        },
        "head_sweep": sweep,
        "mlp_effects": comp["mlps"].tolist(),
        "head_effects": comp["heads"].tolist(),
        "pairs": pairs,
        "top_neurons": {(ctx.layers[li], n) for li, n in ids},
        "type_counts": counts,
        "batch": batch,
    }


def top_by_attribution(ctx: Context, batch: Batch) -> dict[int, torch.Tensor]:
    """Top-`top_frac` neurons per late layer ranked by attribution patching (the fast proxy)."""
    cf_cache = cache(ctx.model, ctx.parts, batch.tok_cf)
    attrib = P.attribution_effects(
        ctx.model,
        ctx.parts,
        ctx.layers,
        batch.tok,
        cf_cache,
        batch.r,
        batch.r_cf,
        ctx.cfg.n_numbers,
    )
    return C.top_masks(attrib, ctx.layers, ctx.cfg.top_frac)


def heuristic_pairs(ctx: Context, operator: str, batch: Batch) -> set:
    """(layer, neuron, heuristic) pairs among the attribution-top neurons of a model."""
    clf = Classifier(ctx, operator)
    ids, _, implements = clf.run(top_by_attribution(ctx, batch))
    return {
        (ctx.layers[li], n, clf.heur[j].name)
        for (li, n), hs in zip(ids, implements, strict=True)
        for j in hs
    }
