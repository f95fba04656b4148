"""Comparison methods with one interface: `prepare(method, model, ...)` returns the model to train
with exactly the method's parameters trainable, and `rank_for_budget` gives every method the
per-layer ranks whose trainable count lies within BUDGET_TOL of LoRA's at a given rank (equal
budget; see its docstring for the rule).

LoRA (LoCon form for convolutions), DoRA (`use_dora=True`), LoHa and LoKr come from peft; LoCon
with a Tucker middle conv (`use_tucker=True`, the closest prior art) from LyCORIS (lycoris-lora).
Full fine-tuning, linear probing and BitFit are a choice of which parameters train. FLoRA and its
flat ablation go through `adapter.apply_flora`.
"""

from __future__ import annotations

import copy
import functools
import re
import warnings

from torch import nn

from .adapter import (
    apply_flora,
    channel_ranks,
    flora_modules,
    nearest_to_budget,
    ranks_near_lora_budget,
)

PEFT_METHODS = ("lora", "dora", "loha", "lokr")
ADAPTERS = ("flora", "flora_flat", "lora", "dora", "locon_tucker", "loha", "lokr")
NO_RANK = ("full", "linear_probe", "bitfit")
BUDGET_TOL = (
    0.025  # the largest relative gap to LoRA's count the rank rule accepts without fallback
)
Ranks = int | dict[str, int]  # one rank for every adapted layer, or one per layer (module name)


def peft_wrap(
    model: nn.Module, kind: str, pattern: str, rank: int, alpha: float, head: str | None,
    layer_ranks: dict[str, int] | None = None,
):  # fmt: skip
    """peft's LoRA/DoRA/LoHa/LoKr on every module whose name fully matches `pattern`; `head` trains.
    `layer_ranks` gives named layers their own rank, alpha following so alpha / r stays the same."""
    from peft import LoHaConfig, LoKrConfig, LoraConfig, get_peft_model

    layer_ranks = layer_ranks or {}
    common = {"r": rank, "target_modules": pattern, "modules_to_save": [head] if head else None,
              "rank_pattern": {re.escape(n): r for n, r in layer_ranks.items()},
              "alpha_pattern": {re.escape(n): alpha * r / rank for n, r in layer_ranks.items()}}  # fmt: skip
    if kind in ("lora", "dora"):
        config = LoraConfig(lora_alpha=alpha, use_dora=kind == "dora", **common)
    elif kind == "loha":
        config = LoHaConfig(alpha=alpha, use_effective_conv2d=True, **common)
    elif kind == "lokr":
        config = LoKrConfig(alpha=alpha, use_effective_conv2d=True, **common)
    else:
        raise ValueError(f"unknown peft method {kind!r}; expected one of {PEFT_METHODS}")
    with warnings.catch_warnings():  # peft warns that a plain nn.Module has no HF config
        warnings.simplefilter("ignore")
        return get_peft_model(model, config)


class LoConTucker(nn.Module):
    """LyCORIS LoCon with `use_tucker=True`: dW = up(out, r) . mid(r, r, k, k) . down(r, in)."""

    def __init__(self, base: nn.Module, rank: int, alpha: float):
        super().__init__()
        from lycoris.modules.locon import LoConModule

        self.base = base.requires_grad_(False)
        self.lyco = LoConModule("locon", base, lora_dim=rank, alpha=alpha, use_tucker=True)

    def forward(self, x):
        return self.lyco(x)


def matched_names(model: nn.Module, pattern: str) -> list[str]:
    """Qualified names of the modules whose name fully matches the regex `pattern`."""
    return [n for n, _ in model.named_modules() if n and re.fullmatch(pattern, n)]


def layer_rank(ranks: Ranks, name: str) -> int:
    return ranks[name] if isinstance(ranks, dict) else ranks


def apply_locon_tucker(model: nn.Module, pattern: str, ranks: Ranks, scale: float) -> None:
    model.requires_grad_(False)
    for name in matched_names(model, pattern):
        parent_name, _, child = name.rpartition(".")
        parent, r = model.get_submodule(parent_name), layer_rank(ranks, name)
        setattr(parent, child, LoConTucker(getattr(parent, child), r, scale * r))


def prepare(
    method: str, model: nn.Module, pattern: str, head: str, rank: Ranks, scale: float
) -> nn.Module:
    """Return `model` set up for `method` (modules matching `pattern` adapted, `head` trained).

    `rank` is one rank for every adapted layer or a dict {module name: rank} (`rank_for_budget`);
    for FLoRA and FLoRA-flat an int is LoRA's rank of the budget (`ranks_near_lora_budget` picks
    each layer's channel rank) and a dict gives each layer's channel rank. `scale` is the update's
    multiplier for every adapter, the same on every layer: FLoRA's s, alpha / r for the others.
    """
    if method in PEFT_METHODS:
        if isinstance(rank, dict):
            base = min(rank.values())
            return peft_wrap(model, method, pattern, base, scale * base, head, rank)
        return peft_wrap(model, method, pattern, rank, scale * rank, head)
    if method in ("flora", "flora_flat"):
        ranks = (
            {n: functools.partial(channel_ranks, r=r) for n, r in rank.items()}
            if isinstance(rank, dict)
            else ranks_near_lora_budget(rank)
        )
        apply_flora(model, pattern, ranks, scale, flat=method != "flora")
    elif method == "locon_tucker":
        apply_locon_tucker(model, pattern, rank, scale)
    elif method == "full":
        model.requires_grad_(True)
    elif method == "linear_probe":
        model.requires_grad_(False)
    elif method == "bitfit":
        for name, p in model.named_parameters():
            p.requires_grad_(name.endswith("bias"))
    else:
        raise ValueError(f"unknown method {method!r}")
    model.get_submodule(head).requires_grad_(True)
    return model


def trainable_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def mean_rank(ranks: Ranks) -> float:
    """One number for a rank choice: the mean over layers of a per-layer one."""
    return float(sum(ranks.values()) / len(ranks)) if isinstance(ranks, dict) else float(ranks)


def layer_counts(method: str, model: nn.Module, pattern: str, head: str, ranks: Ranks
                 ) -> tuple[dict[str, int], int]:  # fmt: skip
    """({adapted layer: its trainable count}, the rest's count: the head) of `method` at `ranks`."""
    prepared = prepare(method, copy.deepcopy(model), pattern, head, ranks, 1.0)
    inner = prepared.get_base_model() if hasattr(prepared, "get_base_model") else prepared
    per_layer = {n: trainable_count(inner.get_submodule(n)) for n in matched_names(model, pattern)}
    return per_layer, trainable_count(prepared) - sum(per_layer.values())


def start_ranks(method: str, model: nn.Module, pattern: str, head: str, lora_rank: int) -> Ranks:
    """The rule before any layer moves: FLoRA's channel rank nearest to LoRA's count layer by
    layer (`ranks_near_lora_budget`); for the others the uniform rank whose count is nearest to
    LoRA's, ties to the smaller (counts grow with r, so the search stops above the budget)."""
    if method in ("flora", "flora_flat"):
        prepared = prepare(method, copy.deepcopy(model), pattern, head, lora_rank, 1.0)
        return {n: max(m.ranks[:2]) for n, m in flora_modules(prepared).items()}

    def count(m: str, r: int) -> int:
        return trainable_count(prepare(m, copy.deepcopy(model), pattern, head, r, 1.0))

    budget, counts = count("lora", lora_rank), {}
    for r in range(1, 4 * lora_rank + 1):
        counts[r] = count(method, r)
        if counts[r] > budget:
            break
    return nearest_to_budget(counts, budget)


def fewest_moves(options: dict[str, dict[int, int]], start: dict[str, int], rest: int,
                 budget: int, tol: float = BUDGET_TOL) -> dict[str, int]:  # fmt: skip
    """Per-layer ranks from options[layer][rank] = the layer's count at that rank: the fewest
    layers moved away from `start` that bring rest + sum of counts within tol * budget of
    `budget` (ties: the nearer count, then the smaller); if none does, the nearest count (ties:
    fewer moves, then the smaller count). Exact: a dynamic programme over reachable totals."""
    reach: dict[int, tuple[int, dict[str, int]]] = {rest: (0, {})}  # total -> (moves, ranks)
    for name, counts in options.items():
        nxt: dict[int, tuple[int, dict[str, int]]] = {}
        for total, (moves, ranks) in reach.items():
            for r, c in counts.items():
                cand = (moves + (r != start[name]), {**ranks, name: r})
                if total + c not in nxt or cand[0] < nxt[total + c][0]:
                    nxt[total + c] = cand
        reach = nxt
    near = [t for t in reach if abs(t - budget) <= tol * budget]
    if near:
        best = min(near, key=lambda t: (reach[t][0], abs(t - budget), t))
    else:
        best = min(reach, key=lambda t: (abs(t - budget), reach[t][0], t))
    return reach[best][1]


def rank_for_budget(method: str, model: nn.Module, pattern: str, head: str, lora_rank: int
                    ) -> Ranks:  # fmt: skip
    """`method`'s ranks at LoRA's budget for `lora_rank` (LoRA's trainable count at that rank).

    A fractional budget: start from `start_ranks` (one rank for the model, FLoRA one per layer),
    then move the fewest layers by one rank (up or down, never below 1) that bring the count
    within BUDGET_TOL of LoRA's, or as near as one-rank moves can (`fewest_moves`). So a method
    whose uniform ranks r and r - 1 straddle the budget (DoRA on the ViT: its magnitude vectors
    are half a rank step) gets some layers at r and the rest at r - 1. Counts add up layer by
    layer, so the total is exact. LoRA (the reference) and the rank-free methods keep `lora_rank`.
    """
    if method == "lora" or method in NO_RANK:
        return lora_rank
    start = start_ranks(method, model, pattern, head, lora_rank)
    names = matched_names(model, pattern)
    start = {n: layer_rank(start, n) for n in names}
    options: dict[str, dict[int, int]] = {n: {} for n in names}
    rest = 0
    for shift in (0, -1, 1):
        ranks = {n: max(1, r + shift) for n, r in start.items()}
        per_layer, rest = layer_counts(method, model, pattern, head, ranks)
        for n, c in per_layer.items():
            options[n].setdefault(ranks[n], c)
    budget = trainable_count(prepare("lora", copy.deepcopy(model), pattern, head, lora_rank, 1.0))
    return fewest_moves(options, start, rest, budget)
