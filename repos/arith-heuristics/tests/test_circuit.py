"""Circuit wiring: top-k neuron selection, disjoint analysis/validation prompts, the late
layers, and the knockout masks."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from arith_heuristics import circuit as C
from arith_heuristics.config import OPERATORS
from arith_heuristics.data import Vocab
from arith_heuristics.knockout import accuracy_with_ablation, prompt_masks
from arith_heuristics.model import build_model, hooked, last_logits, locate


def test_top_masks_keep_the_highest_scores():
    scores = torch.tensor([[0.1, 0.9, 0.5, -2.0, 0.7], [3.0, 0.0, 1.0, 2.0, -1.0]])
    masks = C.top_masks(scores, [2, 3], 0.4)  # round(0.4 * 5) = 2 per layer
    assert masks[2].tolist() == [False, True, False, False, True]
    assert masks[3].tolist() == [True, False, False, True, False]


def _context(tiny, **over):
    cfg = dataclasses.replace(tiny, **over)
    torch.manual_seed(0)
    vocab = Vocab(cfg.n_numbers)
    model = build_model(cfg, vocab).eval()
    return C.make_context(model, locate(model), vocab, cfg, with_means=False)


def test_late_layers_start_at_first_heuristics_layer(tiny):
    ctx = _context(tiny, n_layer=4, first_heuristics_layer=2)
    assert ctx.layers == [2, 3]
    assert _context(tiny, n_layer=3, first_heuristics_layer=0).layers == [0, 1, 2]


def test_analysis_and_validation_prompts_are_disjoint(tiny):
    ctx = _context(tiny, n_prompts=8)
    pool = ctx.legal.subset(np.nonzero(ctx.legal.ops == OPERATORS.index("+"))[0])
    test, val = C.split_prompts(ctx, pool, 0)
    key = lambda p: set(zip(p.op1.tolist(), p.op2.tolist(), strict=True))
    assert len(test.clean) == len(val.clean) == 8
    assert not key(test.clean) & key(val.clean)


def test_knockout_zeroes_only_the_masked_neurons(tiny):
    ctx = _context(tiny)
    with torch.no_grad():  # larger weights: the answer depends on the prompt and the neurons
        for w in ctx.model.parameters():
            w.mul_(4)
    tok = ctx.legal.tokens(ctx.vocab)
    n, d, layer = ctx.cfg.n_numbers, ctx.parts.d_mlp, ctx.layers[0]
    mask = torch.zeros(d, dtype=torch.bool)
    mask[::2] = True

    def by_hand(i, x):
        if i != layer:
            return None
        x = x.clone()
        x[:, -1, mask] = 0.0
        return x

    with torch.no_grad():
        plain = last_logits(ctx.model, tok)[:, :n].argmax(-1).numpy()
        with hooked(ctx.parts, mlp=by_hand):
            ablated = last_logits(ctx.model, tok)[:, :n].argmax(-1).numpy()
    assert (plain != ablated).any()  # the check below can tell the two apart
    got = accuracy_with_ablation(ctx.model, ctx.parts, tok, ablated, {layer: mask}, n)
    assert got.all()
    none = {layer: torch.zeros(d, dtype=torch.bool)}
    assert accuracy_with_ablation(ctx.model, ctx.parts, tok, plain, none, n).all()


def test_prompt_masks_pick_the_top_scores_and_never_a_zero():
    scores = np.zeros((2, 1, 6))
    scores[0, 0, [1, 4]] = [0.7, 0.9]
    scores[1, 0, [0, 2, 3]] = [0.8, 0.6, 0.95]
    masks = prompt_masks(scores, 3, [5], 6)[5]
    assert masks[0].tolist() == [False, True, False, False, True, False]
    assert masks[1].tolist() == [True, False, True, True, False, False]
    assert prompt_masks(scores, 1, [5], 6)[5].sum(1).tolist() == [1, 1]
