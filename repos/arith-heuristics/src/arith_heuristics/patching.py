"""Activation patching, attribution patching and mean-ablation faithfulness (paper section 3-4).

Clean prompts have result r, counterfactual prompts (same operator) have result r'. Patching
copies the counterfactual activation of one component into the clean run.
"""

from __future__ import annotations

import torch
from torch import nn

from .model import Parts, hooked, last_logits

EPS = 1e-9
"""Floor on probabilities in E: the measure divides by them and explodes for tiny P."""


def effect(
    p_clean: torch.Tensor, p_patched: torch.Tensor, r: torch.Tensor, r_cf: torch.Tensor
) -> torch.Tensor:
    """Paper's E, per prompt: 1/2 [(P*(r') - P(r'))/P(r') + (P(r) - P*(r))/P*(r)].

    p_clean = P and p_patched = P* are [N, vocab] probabilities; r, r_cf are [N] token ids.
    """
    pick = lambda p, t: p.gather(1, t[:, None])[:, 0].clamp_min(EPS)
    up = (pick(p_patched, r_cf) - pick(p_clean, r_cf)) / pick(p_clean, r_cf)
    down = (pick(p_clean, r) - pick(p_patched, r)) / pick(p_patched, r)
    return 0.5 * (up + down)


def probs(logits: torch.Tensor, n_numbers: int) -> torch.Tensor:
    """Softmax over the number tokens only (the answer space)."""
    return logits[:, :n_numbers].float().softmax(-1)


@torch.no_grad()
def component_effects(
    model: nn.Module,
    parts: Parts,
    clean: torch.Tensor,
    cf_cache: dict[str, list[torch.Tensor]],
    r: torch.Tensor,
    r_cf: torch.Tensor,
    n_numbers: int,
) -> dict[str, torch.Tensor]:
    """Mean E of patching each head ([L, H]) and each whole MLP ([L]) at every position."""
    p = probs(last_logits(model, clean), n_numbers)
    heads = torch.zeros(parts.n_layer, parts.n_head)
    mlps = torch.zeros(parts.n_layer)
    for layer in range(parts.n_layer):
        src = cf_cache["mlp"][layer]
        with hooked(parts, mlp=lambda i, x, L=layer, s=src: s if i == L else None):
            mlps[layer] = effect(p, probs(last_logits(model, clean), n_numbers), r, r_cf).mean()
        src = cf_cache["attn"][layer]
        width = src.shape[-1] // parts.n_head
        for head in range(parts.n_head):
            sl = slice(head * width, (head + 1) * width)

            def edit(i, x, L=layer, s=src, sl=sl):
                if i != L:
                    return None
                x = x.clone()
                x[..., sl] = s[..., sl]
                return x

            with hooked(parts, attn=edit):
                e = effect(p, probs(last_logits(model, clean), n_numbers), r, r_cf)
            heads[layer, head] = e.mean()
    return {"heads": heads, "mlps": mlps}


@torch.no_grad()
def neuron_effects(
    model: nn.Module,
    parts: Parts,
    layers: list[int],
    clean: torch.Tensor,
    cf_cache: dict[str, list[torch.Tensor]],
    r: torch.Tensor,
    r_cf: torch.Tensor,
    n_numbers: int,
    chunk: int = 16,
) -> torch.Tensor:
    """Exact patching, one neuron at a time at the last position: mean E, [len(layers), d_mlp].

    `chunk` neurons are patched in one forward pass by tiling the prompt batch.
    """
    n, d = clean.shape[0], parts.d_mlp
    p = probs(last_logits(model, clean), n_numbers)
    out = torch.zeros(len(layers), d)
    for li, layer in enumerate(layers):
        src = cf_cache["mlp"][layer][:, -1, :]
        for start in range(0, d, chunk):
            ids = torch.arange(start, min(start + chunk, d))
            c = len(ids)
            rows = torch.arange(c * n)
            cols = ids.repeat_interleave(n)

            def edit(i, x, L=layer, cols=cols, rows=rows, c=c, src=src):
                if i != L:
                    return None
                x = x.clone()
                x[rows, -1, cols] = src.repeat(c, 1)[rows, cols]
                return x

            with hooked(parts, mlp=edit):
                p_star = probs(last_logits(model, clean.repeat(c, 1)), n_numbers)
            e = effect(p.repeat(c, 1), p_star, r.repeat(c), r_cf.repeat(c))
            out[li, ids] = e.view(c, n).mean(1)
    return out


def attribution_effects(
    model: nn.Module,
    parts: Parts,
    layers: list[int],
    clean: torch.Tensor,
    cf_cache: dict[str, list[torch.Tensor]],
    r: torch.Tensor,
    r_cf: torch.Tensor,
    n_numbers: int,
) -> torch.Tensor:
    """Attribution patching (eap/attr_patching.py): grad of E at the clean run times
    (h_cf - h_clean), per neuron at the last position, mean over prompts; [len(layers), d_mlp]."""
    grads: dict[int, torch.Tensor] = {}
    acts: dict[int, torch.Tensor] = {}

    def edit(i, x):
        if i in layers:
            x = x.detach().requires_grad_(True)
            acts[i] = x
        return x

    with torch.enable_grad(), hooked(parts, mlp=edit):
        logits = last_logits(model, clean)
        p_star = probs(logits, n_numbers)
        e = effect(p_star.detach(), p_star, r, r_cf).sum()
        got = torch.autograd.grad(e, [acts[i] for i in layers])
    for i, g in zip(layers, got, strict=True):
        grads[i] = g[:, -1, :]
    rows = [
        (grads[i] * (cf_cache["mlp"][i][:, -1, :] - acts[i].detach()[:, -1, :])).mean(0)
        for i in layers
    ]
    return torch.stack(rows)


def normalized_logit(logits: torch.Tensor, r: torch.Tensor, n_numbers: int) -> torch.Tensor:
    """NL: the correct answer's logit divided by the maximum (number-token) logit, mean over N."""
    z = logits[:, :n_numbers]
    return (z.gather(1, r[:, None])[:, 0] / z.max(-1).values).mean()


def faithfulness(nl_circuit: float, nl_empty: float, nl_full: float) -> float:
    """F(c) = (NL(c) - NL(empty)) / (NL(M) - NL(empty))."""
    return (nl_circuit - nl_empty) / (nl_full - nl_empty)


@torch.no_grad()
def nl_with_neurons(
    model: nn.Module,
    parts: Parts,
    tokens: torch.Tensor,
    r: torch.Tensor,
    keep: dict[int, torch.Tensor],
    means: list[torch.Tensor],
    n_numbers: int,
) -> float:
    """NL with every neuron of the layers in `keep` mean-ablated at the last position,
    except those whose mask entry is True."""

    def edit(i, x):
        if i not in keep:
            return None
        x = x.clone()
        drop = ~keep[i]
        x[:, -1, drop] = means[i][-1, drop]
        return x

    with hooked(parts, mlp=edit):
        return float(normalized_logit(last_logits(model, tokens), r, n_numbers))


@torch.no_grad()
def nl_with_heads(
    model: nn.Module,
    parts: Parts,
    tokens: torch.Tensor,
    r: torch.Tensor,
    keep: torch.Tensor,
    means: list[torch.Tensor],
    n_numbers: int,
) -> float:
    """NL with every head outside the [L, H] mask `keep` mean-ablated at every position."""

    def edit(i, x):
        width = x.shape[-1] // parts.n_head
        drop = (~keep[i]).repeat_interleave(width)
        if not drop.any():
            return None
        x = x.clone()
        x[:, :, drop] = means[i][:, drop]
        return x

    with hooked(parts, attn=edit):
        return float(normalized_logit(last_logits(model, tokens), r, n_numbers))


@torch.no_grad()
def mean_activations(model: nn.Module, parts: Parts, tokens: torch.Tensor, kind: str):
    """Per layer [T, D] mean of a projection input over all prompts (correct or not)."""
    from .model import cache

    return [x.mean(0) for x in cache(model, parts, tokens)[kind]]
