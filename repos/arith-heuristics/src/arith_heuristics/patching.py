"""Activation patching, attribution patching and mean-ablation faithfulness (paper section 3-4).

Clean prompts have result r, counterfactual prompts (same operator) have result r'. Patching
copies the counterfactual activation of one component into the clean run.
"""

from __future__ import annotations

import dataclasses

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
    """Mean E of patching each head ([L, H]) and each whole MLP ([L]), one token position at a
    time (op1, operator, op2, '='), averaged over positions (script_circuit_localization.py)."""
    p = probs(last_logits(model, clean), n_numbers)
    heads = torch.zeros(parts.n_layer, parts.n_head)
    mlps = torch.zeros(parts.n_layer)
    positions = range(1, clean.shape[1])  # position 0 is BOS

    def patched(kind: str, layer: int, pos: int, sl: slice) -> float:
        src = cf_cache[kind][layer]

        def edit(i, x):
            if i != layer:
                return None
            x = x.clone()
            x[:, pos, sl] = src[:, pos, sl]
            return x

        with hooked(parts, **{kind: edit}):
            return float(effect(p, probs(last_logits(model, clean), n_numbers), r, r_cf).mean())

    for layer in range(parts.n_layer):
        width = cf_cache["attn"][layer].shape[-1] // parts.n_head
        for pos in positions:
            mlps[layer] += patched("mlp", layer, pos, slice(None)) / len(positions)
            for head in range(parts.n_head):
                sl = slice(head * width, (head + 1) * width)
                heads[layer, head] += patched("attn", layer, pos, sl) / len(positions)
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


def normalized_logit(logits: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """NL per prompt: the correct answer's logit divided by the maximum logit (whole vocabulary,
    as evaluation_utils.py does); [N]."""
    return logits.gather(1, r[:, None])[:, 0] / logits.max(-1).values


def faithfulness(nl_circuit, nl_empty, nl_full):
    """F(c) = (NL(c) - NL(empty)) / (NL(M) - NL(empty)) (Eq. 2), elementwise."""
    return (nl_circuit - nl_empty) / (nl_full - nl_empty)


MIN_DENOMINATOR = 0.05
"""Prompts whose NL(M) - NL(empty) is below this are left out of the per-prompt mean: there the
empty circuit already predicts the answer and the ratio explodes (the official code drops
answer-0 prompts for the same reason)."""


def faithfulness_scores(
    nl_circuit: torch.Tensor, nl_empty: torch.Tensor, nl_full: torch.Tensor
) -> dict[str, float]:
    """F as the official code computes it (mean of per-prompt ratios, over prompts with a usable
    denominator), F as a ratio of means, and the share of prompts left out."""
    den = nl_full - nl_empty
    ok = den.abs() >= MIN_DENOMINATOR
    per_prompt = faithfulness(nl_circuit, nl_empty, nl_full)[ok].mean() if ok.any() else torch.nan
    return {
        "per_prompt": float(per_prompt),
        "of_means": float(faithfulness(nl_circuit.mean(), nl_empty.mean(), nl_full.mean())),
        "excluded": float(1 - ok.float().mean()),
    }


@dataclasses.dataclass
class Circuit:
    """Which components are kept; everything else is mean-ablated at every position."""

    heads: torch.Tensor
    """[L, H] bool: attention heads kept."""
    neurons: torch.Tensor
    """[L, d_mlp] bool: MLP neurons kept (a whole row: the full MLP)."""

    @classmethod
    def full(cls, parts: Parts) -> Circuit:
        return cls(
            torch.ones(parts.n_layer, parts.n_head, dtype=torch.bool),
            torch.ones(parts.n_layer, parts.d_mlp, dtype=torch.bool),
        )

    @classmethod
    def empty(cls, parts: Parts) -> Circuit:
        return cls(
            torch.zeros(parts.n_layer, parts.n_head, dtype=torch.bool),
            torch.zeros(parts.n_layer, parts.d_mlp, dtype=torch.bool),
        )


@torch.no_grad()
def circuit_logits(
    model: nn.Module,
    parts: Parts,
    tokens: torch.Tensor,
    circuit: Circuit,
    means: dict[str, list[torch.Tensor]],
) -> torch.Tensor:
    """[N, vocab] last-position logits with every head and neuron outside `circuit` replaced by
    its mean over all prompts at every position (evaluation_utils.run_with_mean_ablation)."""

    def mlp(i, x):
        drop = ~circuit.neurons[i]
        if not drop.any():
            return None
        x = x.clone()
        x[:, :, drop] = means["mlp"][i][: x.shape[1], drop]
        return x

    def attn(i, x):
        drop = (~circuit.heads[i]).repeat_interleave(x.shape[-1] // parts.n_head)
        if not drop.any():
            return None
        x = x.clone()
        x[:, :, drop] = means["attn"][i][: x.shape[1], drop]
        return x

    with hooked(parts, mlp=mlp, attn=attn):
        return last_logits(model, tokens)


def circuit_nl(model, parts, tokens, r, circuit, means) -> torch.Tensor:
    """Per-prompt NL of `circuit` under mean ablation; [N]."""
    return normalized_logit(circuit_logits(model, parts, tokens, circuit, means), r)


@torch.no_grad()
def mean_activations(
    model: nn.Module, parts: Parts, tokens: torch.Tensor, batch: int = 2048
) -> dict[str, list[torch.Tensor]]:
    """Per layer [T, D] mean of each projection input over `tokens` (all prompts, legal or not),
    accumulated batch by batch."""
    from .model import cache

    sums: dict[str, list[torch.Tensor]] = {}
    for start in range(0, len(tokens), batch):
        part = cache(model, parts, tokens[start : start + batch])
        for kind, xs in part.items():
            got = [x.sum(0) for x in xs]
            sums[kind] = got if kind not in sums else [a + b for a, b in zip(sums[kind], got)]
    return {kind: [x / len(tokens) for x in xs] for kind, xs in sums.items()}
