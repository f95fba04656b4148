"""Comparison methods with one interface: `prepare(method, model, ...)` returns the model to train
with exactly the method's parameters trainable.

LoRA (LoCon form for convolutions), LoHa and LoKr come from peft; full fine-tuning, linear probing
and BitFit are a choice of which parameters train. FLoRA goes through `adapter.apply_flora`.
"""

from __future__ import annotations

import warnings

from torch import nn

from .adapter import apply_flora, ranks_within_lora_budget


def peft_wrap(model: nn.Module, kind: str, pattern: str, rank: int, alpha: float, head: str | None):
    """peft's LoRA/LoHa/LoKr on every module whose name fully matches `pattern`; `head` trains too."""
    from peft import LoHaConfig, LoKrConfig, LoraConfig, get_peft_model

    common = {"r": rank, "target_modules": pattern, "modules_to_save": [head] if head else None}
    if kind == "lora":
        config = LoraConfig(lora_alpha=alpha, **common)
    elif kind == "loha":
        config = LoHaConfig(alpha=alpha, use_effective_conv2d=True, **common)
    elif kind == "lokr":
        config = LoKrConfig(alpha=alpha, use_effective_conv2d=True, **common)
    else:
        raise ValueError(f"unknown peft method {kind!r}; expected lora, loha or lokr")
    with warnings.catch_warnings():  # peft warns that a plain nn.Module has no HF config
        warnings.simplefilter("ignore")
        return get_peft_model(model, config)


def prepare(
    method: str,
    model: nn.Module,
    pattern: str,
    head: str,
    rank: int,
    alpha: float,
    flora_scale: float,
    flora_dropout: float,
) -> nn.Module:
    """Return `model` set up for `method` (modules matching `pattern` adapted, `head` trained)."""
    if method in ("lora", "loha", "lokr"):
        return peft_wrap(model, method, pattern, rank, alpha, head)
    if method == "flora":
        apply_flora(model, pattern, ranks_within_lora_budget(rank), flora_scale, flora_dropout)
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
