"""E on hand-made probabilities, patching invariants, faithfulness end points, attribution."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arith_heuristics import patching as P
from arith_heuristics.config import OPERATORS
from arith_heuristics.data import Vocab, all_legal, counterfactuals
from arith_heuristics.model import build_model, cache, hooked, last_logits, locate


def test_effect_on_hand_made_probabilities():
    p = torch.tensor([[0.5, 0.25, 0.25]])
    p_star = torch.tensor([[0.25, 0.5, 0.25]])
    r, r_cf = torch.tensor([0]), torch.tensor([1])
    # 1/2 [(0.5 - 0.25)/0.25 + (0.5 - 0.25)/0.25] = 1
    assert P.effect(p, p_star, r, r_cf).item() == pytest.approx(1.0)
    assert P.effect(p, p, r, r_cf).item() == 0.0
    # a patch that moves mass the wrong way has negative effect
    assert P.effect(p_star, p, r_cf, r).item() < 0 or P.effect(p, p_star, r_cf, r).item() < 0


@pytest.fixture
def setup(tiny):
    torch.manual_seed(0)
    vocab = Vocab(tiny.n_numbers)
    model = build_model(tiny, vocab).eval()
    prompts = all_legal(("+",), tiny.max_operand, tiny.n_numbers)
    clean = prompts.subset(np.arange(0, len(prompts), 5))
    cf = counterfactuals(clean, prompts, 0)
    return model, locate(model), vocab, clean, cf


def test_patching_with_own_activation_changes_nothing(setup):
    model, parts, vocab, clean, _ = setup
    tok = clean.tokens(vocab)
    own = cache(model, parts, tok)
    with torch.no_grad():
        base = last_logits(model, tok)
        r = torch.as_tensor(clean.result)
        effects = P.component_effects(model, parts, tok, own, r, (r + 1) % 10, 20)
        exact = P.neuron_effects(model, parts, [1], tok, own, r, (r + 1) % 10, 20)
        with hooked(parts, mlp=lambda i, x: own["mlp"][i], attn=lambda i, x: own["attn"][i]):
            patched = last_logits(model, tok)
    assert torch.allclose(base, patched, atol=1e-6)
    assert effects["heads"].abs().max() < 1e-5 and effects["mlps"].abs().max() < 1e-5
    assert exact.abs().max() < 1e-5


def test_chunked_neuron_patching_matches_one_at_a_time(setup):
    model, parts, vocab, clean, cf = setup
    tok, tok_cf = clean.tokens(vocab), cf.tokens(vocab)
    cf_cache = cache(model, parts, tok_cf)
    r, r_cf = torch.as_tensor(clean.result), torch.as_tensor(cf.result)
    fast = P.neuron_effects(model, parts, [1], tok, cf_cache, r, r_cf, 20, chunk=8)
    p = P.probs(last_logits(model, tok), 20).detach()
    for n in (0, 5, 31):

        def edit(i, x, n=n):
            if i != 1:
                return None
            x = x.clone()
            x[:, -1, n] = cf_cache["mlp"][1][:, -1, n]
            return x

        with torch.no_grad(), hooked(parts, mlp=edit):
            slow = P.effect(p, P.probs(last_logits(model, tok), 20), r, r_cf).mean()
        assert fast[0, n].item() == pytest.approx(slow.item(), rel=1e-4, abs=1e-6)
    attrib = P.attribution_effects(model, parts, [1], tok, cf_cache, r, r_cf, 20)
    assert attrib.shape == fast.shape
    assert np.corrcoef(attrib.ravel().numpy(), fast.ravel().numpy())[0, 1] > 0.5


def test_mlp_effect_matches_patching_by_hand(setup):
    """component_effects' whole-MLP E: the counterfactual MLP activation copied into the clean
    run at one position at a time, E averaged over the positions after BOS."""
    model, parts, vocab, clean, cf = setup
    with torch.no_grad():
        for w in model.parameters():
            w.mul_(3)
    tok, tok_cf = clean.tokens(vocab), cf.tokens(vocab)
    cf_cache = cache(model, parts, tok_cf)
    r, r_cf = torch.as_tensor(clean.result), torch.as_tensor(cf.result)
    got = P.component_effects(model, parts, tok, cf_cache, r, r_cf, 20)["mlps"][1]
    p = P.probs(last_logits(model, tok), 20).detach()
    slow = []
    for pos in range(1, tok.shape[1]):

        def edit(i, x, pos=pos):
            if i != 1:
                return None
            x = x.clone()
            x[:, pos] = cf_cache["mlp"][1][:, pos]
            return x

        with torch.no_grad(), hooked(parts, mlp=edit):
            slow.append(P.effect(p, P.probs(last_logits(model, tok), 20), r, r_cf).mean())
    assert abs(float(torch.stack(slow).mean())) > 1e-3
    assert got.item() == pytest.approx(float(torch.stack(slow).mean()), rel=1e-4, abs=1e-6)


def test_faithfulness_is_one_for_the_model_and_zero_for_the_empty_circuit(setup):
    model, parts, vocab, clean, _ = setup
    tok, r = clean.tokens(vocab), torch.as_tensor(clean.result)
    means = P.mean_activations(model, parts, all_legal(OPERATORS, 10, 20).tokens(vocab), batch=7)
    with torch.no_grad():
        nl_model = P.normalized_logit(last_logits(model, tok), r)
    nl_full = P.circuit_nl(model, parts, tok, r, P.Circuit.full(parts), means)
    nl_empty = P.circuit_nl(model, parts, tok, r, P.Circuit.empty(parts), means)
    assert torch.allclose(nl_full, nl_model, atol=1e-6)
    f_full = P.faithfulness_scores(nl_full, nl_empty, nl_model)
    f_empty = P.faithfulness_scores(nl_empty, nl_empty, nl_model)
    assert f_full["per_prompt"] == pytest.approx(1.0) and f_full["of_means"] == pytest.approx(1.0)
    assert f_empty["per_prompt"] == 0.0 and f_empty["of_means"] == 0.0


def test_empty_circuit_output_does_not_depend_on_the_prompt(setup):
    """Everything mean-ablated at every position: the last position sees only '=' (Eq. 2's
    NL(empty) ablates all components, not only late neurons)."""
    model, parts, vocab, clean, _ = setup
    tok = clean.tokens(vocab)
    means = P.mean_activations(model, parts, all_legal(OPERATORS, 10, 20).tokens(vocab))
    logits = P.circuit_logits(model, parts, tok, P.Circuit.empty(parts), means)
    assert torch.allclose(logits, logits[:1].expand_as(logits), atol=1e-5)


def test_batched_means_match_one_pass(setup):
    model, parts, vocab, _, _ = setup
    tok = all_legal(OPERATORS, 10, 20).tokens(vocab)
    a, b = P.mean_activations(model, parts, tok, batch=13), P.mean_activations(model, parts, tok)
    for kind in ("mlp", "attn"):
        for x, y in zip(a[kind], b[kind], strict=True):
            assert torch.allclose(x, y, atol=1e-5)


def test_mean_ablation_matches_nnsight(setup):
    """Our hooks against nnsight's interventions: heads and neurons mean-ablated at every
    position give the same logits."""
    nnsight = pytest.importorskip("nnsight")
    model, parts, vocab, clean, _ = setup
    tok = clean.tokens(vocab)
    means = P.mean_activations(model, parts, all_legal(OPERATORS, 10, 20).tokens(vocab))
    circuit = P.Circuit.full(parts)
    circuit.heads[0, 1] = False
    circuit.neurons[1, ::3] = False
    ours = P.circuit_logits(model, parts, tok, circuit, means)
    width = model.config.n_embd // parts.n_head
    wrapped = nnsight.NNsight(model)
    with torch.no_grad(), wrapped.trace(tok):
        attn_in = wrapped.transformer.h[0].attn.c_proj.input
        attn_in[:, :, width : 2 * width] = means["attn"][0][:, width : 2 * width]
        mlp_in = wrapped.transformer.h[1].mlp.c_proj.input
        mlp_in[:, :, ::3] = means["mlp"][1][:, ::3]
        theirs = wrapped.output.logits.save()
    assert torch.allclose(ours, theirs[:, -1], atol=1e-5)
