"""Comparison methods with one interface: `prepare(method, model, ...)` returns the model to train
with exactly the method's parameters trainable, and `rank_for_budget` gives every method the rank
whose trainable count is nearest to LoRA's at a given rank, ties to the smaller (equal budget).

LoRA (LoCon form for convolutions), DoRA (`use_dora=True`), LoHa and LoKr come from peft; LoCon
with a Tucker middle conv (`use_tucker=True`, the closest prior art) from LyCORIS (lycoris-lora).
Full fine-tuning, linear probing and BitFit are a choice of which parameters train. FLoRA and its
flat ablation go through `adapter.apply_flora`.
"""

from __future__ import annotations

import copy
import re
import warnings

from torch import nn

from .adapter import apply_flora, nearest_to_budget, ranks_near_lora_budget

PEFT_METHODS = ("lora", "dora", "loha", "lokr")
ADAPTERS = ("flora", "flora_flat", "lora", "dora", "locon_tucker", "loha", "lokr")
NO_RANK = ("full", "linear_probe", "bitfit")


def peft_wrap(model: nn.Module, kind: str, pattern: str, rank: int, alpha: float, head: str | None):
    """peft's LoRA/DoRA/LoHa/LoKr on every module whose name fully matches `pattern`; `head` trains."""
    from peft import LoHaConfig, LoKrConfig, LoraConfig, get_peft_model

    common = {"r": rank, "target_modules": pattern, "modules_to_save": [head] if head else None}
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


def apply_locon_tucker(model: nn.Module, pattern: str, rank: int, alpha: float) -> None:
    model.requires_grad_(False)
    for name in [n for n, _ in model.named_modules() if n and re.fullmatch(pattern, n)]:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name)
        setattr(parent, child, LoConTucker(getattr(parent, child), rank, alpha))


def prepare(
    method: str, model: nn.Module, pattern: str, head: str, rank: int, scale: float
) -> nn.Module:
    """Return `model` set up for `method` (modules matching `pattern` adapted, `head` trained).

    `scale` is the update's multiplier for every adapter: FLoRA's s, alpha / r for the others.
    """
    if method in PEFT_METHODS:
        return peft_wrap(model, method, pattern, rank, scale * rank, head)
    if method in ("flora", "flora_flat"):
        apply_flora(model, pattern, ranks_near_lora_budget(rank), scale, flat=method != "flora")
    elif method == "locon_tucker":
        apply_locon_tucker(model, pattern, rank, scale * rank)
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


def rank_for_budget(method: str, model: nn.Module, pattern: str, head: str, lora_rank: int) -> int:
    """The rank at which `method`'s trainable count is nearest to LoRA's at `lora_rank` (ties: the
    smaller rank; the same rule FLoRA and FLoRA-flat apply layer by layer, so they get `lora_rank`
    back). Counts grow with the rank, so the search stops at the first rank above the budget.
    """
    if method in ("flora", "flora_flat", "lora") or method in NO_RANK:
        return lora_rank

    def count(m: str, r: int) -> int:
        return trainable_count(prepare(m, copy.deepcopy(model), pattern, head, r, 1.0))

    budget, counts = count("lora", lora_rank), {}
    for r in range(1, 4 * lora_rank + 1):
        counts[r] = count(method, r)
        if counts[r] > budget:
            break
    return nearest_to_budget(counts, budget)
