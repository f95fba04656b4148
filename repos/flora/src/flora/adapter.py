"""FLoRA adapters: a Tucker-form weight update that keeps the weight's own N-D layout.

For a frozen weight W0 of shape (d_1, ..., d_N) (Linear: (out, in); ConvNd: (out, in/groups, k_1, ...))
the update is the Tucker product of the paper (Sec. 3, "low-rank core space"):

    dW = s * G x_1 A1 x_2 A2 ... x_N AN,   G in R^{r_1 x ... x r_N},  An in R^{d_n x r_n}

and the layer computes y = layer(x; W0) + layer(dropout(x); dW). For N = 2 this is dW = s * A1 G A2^T.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .results import save_safetensors
from .weights import load_tensors_into

SUPPORTED = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
RankRule = Sequence[int] | Callable[[tuple[int, ...]], Sequence[int]]
RankSpec = RankRule | Mapping[str, RankRule]


def tucker_delta(core: torch.Tensor, factors: Sequence[torch.Tensor], scale: float) -> torch.Tensor:
    """dW = s * G x_1 A1 ... x_N AN (the paper's Tucker update), in the weight's own mode order.

    Modes are multiplied in order of growth d_n / r_n, smallest first: square kernel factors
    (3 x 3) keep the intermediate at the core's size, so the large channel modes are expanded
    last. Measured on a (256, 256, 3, 3) weight this is ~6x faster than tensorly's
    `tucker_to_tensor`, which goes mode by mode (the benchmark's performance row).
    """
    w = core
    for n in sorted(range(len(factors)), key=lambda n: factors[n].shape[0] / factors[n].shape[1]):
        w = torch.movedim(torch.tensordot(factors[n], w, dims=([1], [n])), 0, n)
    return scale * w


def flora_param_count(shape: Sequence[int], ranks: Sequence[int]) -> int:
    """Trainable parameters of one FLoRA adapter: prod(r_n) + sum(d_n * r_n)."""
    return math.prod(ranks) + sum(d * r for d, r in zip(shape, ranks, strict=True))


def check_ranks(shape: Sequence[int], ranks: Sequence[int]) -> tuple[int, ...]:
    """Return ranks as a tuple, or raise ValueError naming the bad rank and the weight's shape."""
    ranks = tuple(int(r) for r in ranks)
    if len(ranks) != len(shape):
        raise ValueError(
            f"ranks {ranks} have {len(ranks)} entries, but the weight {tuple(shape)} has "
            f"{len(shape)} modes: give one rank per mode (out, in/groups, kernel...)"
        )
    for n, (d, r) in enumerate(zip(shape, ranks)):
        if not 1 <= r <= d:
            raise ValueError(
                f"rank {r} for mode {n} of weight {tuple(shape)} must lie in [1, {d}] (the mode's size)"
            )
    return ranks


def lora_param_count(shape: Sequence[int], rank: int) -> int:
    """peft LoRA on a Linear/ConvNd (LoCon form): A maps in*k... -> r, B maps r -> out."""
    return rank * (math.prod(shape[1:]) + shape[0])


def nearest_to_budget(counts: dict[int, int], budget: int) -> int:
    """The rank whose trainable count is nearest to `budget`; a tie goes to the smaller rank."""
    return min(counts, key=lambda r: (abs(counts[r] - budget), r))


def channel_ranks(shape: Sequence[int], r: int) -> tuple[int, ...]:
    """Channel rank r on the (out, in/groups) modes, clipped to their sizes (a depthwise conv gets
    1 on its in/groups mode); kernel modes at full rank."""
    return (min(r, shape[0]), min(r, shape[1]), *shape[2:])


def ranks_near_lora_budget(lora_rank: int) -> Callable[[tuple[int, ...]], tuple[int, ...]]:
    """A rank rule for whole models: full rank on kernel modes, and the channel rank r (clipped to
    each mode's size, so a depthwise conv gets 1 on its in/groups mode) whose FLoRA parameter
    count is nearest to what LoRA of rank `lora_rank` spends on the same weight (ties: smaller r).
    A "largest r within the budget" rule would leave linear layers at r - 1 (the r x r core).
    `baselines.rank_for_budget` starts from it and moves a few layers by one rank to bring the
    whole model's count near LoRA's."""

    def rule(shape: tuple[int, ...]) -> tuple[int, ...]:
        counts = {
            r: flora_param_count(shape, channel_ranks(shape, r))
            for r in range(1, max(shape[0], shape[1]) + 1)
        }
        return channel_ranks(shape, nearest_to_budget(counts, lora_param_count(shape, lora_rank)))

    return rule


def _hf_conv1d() -> type | None:
    """transformers' GPT-2 `Conv1D` (a Linear with an (in, out) weight), when transformers is there."""
    try:
        from transformers.pytorch_utils import Conv1D
    except ImportError:
        return None
    return Conv1D


def supported_types() -> tuple[type, ...]:
    return SUPPORTED + ((c,) if (c := _hf_conv1d()) else ())


class FLoRA(nn.Module):
    """A Linear/Conv1d/Conv2d/Conv3d (or HF Conv1D) with a frozen weight and a trainable Tucker update.

    Modes follow the weight's own layout: (out, in/groups, k...) for nn layers, (in, out) for HF
    Conv1D. `flat=True` is the ablation without the paper's ingredient: the same core-and-factors
    update on the (out, in*k*...) matrix (a three-factor LoRA), reshaped to the weight.
    """

    def __init__(
        self,
        base: nn.Module,
        ranks: Sequence[int],
        scale: float = 1.0,
        dropout: float = 0.0,
        flat: bool = False,
    ):
        super().__init__()
        if not isinstance(base, supported_types()):
            names = ", ".join(c.__name__ for c in supported_types())
            raise TypeError(f"FLoRA supports {names}; got {type(base).__name__}")
        shape = tuple(base.weight.shape)  # grouped conv: (out, in/groups, k...), as conv uses it
        self.flat = flat and len(shape) > 2
        if self.flat:
            shape = (shape[0], math.prod(shape[1:]))
        self.ranks = check_ranks(shape, ranks)
        self.scale = float(scale)
        self.base = base.requires_grad_(False)
        self.core = nn.Parameter(torch.zeros(self.ranks, dtype=base.weight.dtype))
        self.factors = nn.ParameterList(
            nn.Parameter(torch.empty(d, r, dtype=base.weight.dtype))
            for d, r in zip(shape, self.ranks)
        )
        for a in self.factors:  # the core is zero, so dW = 0 at the start either way
            if len(shape) == 2:  # official LLM code (A G B^T): Kaiming-uniform, a = sqrt 5
                nn.init.kaiming_uniform_(a, a=math.sqrt(5))
            else:  # official conv code: Kaiming-normal, a = sqrt 3
                nn.init.kaiming_normal_(a, a=math.sqrt(3))
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.merged = False

    def delta_weight(self) -> torch.Tensor:
        delta = tucker_delta(self.core, list(self.factors), self.scale)
        return delta.reshape(self.base.weight.shape) if self.flat else delta

    def apply_weight(
        self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The base layer's operation (stride, padding, dilation, groups) with another weight."""
        if isinstance(self.base, nn.Linear):
            return F.linear(x, weight, bias)
        if isinstance(self.base, nn.modules.conv._ConvNd):
            return self.base._conv_forward(x, weight, bias)
        out = x @ weight  # HF Conv1D: y = x W + b with W of shape (in, out)
        return out if bias is None else out + bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.merged:
            return self.base(x)
        if isinstance(self.dropout, nn.Identity):
            # layer(x; W0) + layer(x; dW) = layer(x; W0 + dW): one conv instead of two, same gradients.
            return self.apply_weight(x, self.base.weight + self.delta_weight(), self.base.bias)
        return self.base(x) + self.apply_weight(self.dropout(x), self.delta_weight())

    @torch.no_grad()
    def merge(self) -> None:
        """W0 <- W0 + dW, so inference costs what the base layer costs."""
        if not self.merged:
            self.base.weight += self.delta_weight()
            self.merged = True

    @torch.no_grad()
    def unmerge(self) -> None:
        if self.merged:
            self.base.weight -= self.delta_weight()
            self.merged = False


def apply_flora(
    model: nn.Module,
    pattern: str,
    ranks: RankSpec,
    scale: float = 1.0,
    dropout: float = 0.0,
    flat: bool = False,
) -> list[str]:
    """Freeze `model` and replace every module whose qualified name fully matches the regex
    `pattern` by a FLoRA wrapper. `ranks` is one rank per weight mode, a rule shape -> ranks, or
    a mapping from each matched module name to either. Returns the wrapped names; raises
    ValueError when nothing matches."""
    regex = re.compile(pattern)
    names = [n for n, _ in model.named_modules() if n and regex.fullmatch(n)]
    if not names:
        raise ValueError(f"pattern {pattern!r} matches no module of {type(model).__name__}")
    model.requires_grad_(False)
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name)
        base = getattr(parent, child)
        if not isinstance(base, supported_types()):
            supported = ", ".join(c.__name__ for c in supported_types())
            raise TypeError(
                f"module {name!r} is a {type(base).__name__}; FLoRA supports {supported}"
            )
        shape = tuple(base.weight.shape)
        if flat and len(shape) > 2:
            shape = (shape[0], math.prod(shape[1:]))
        if isinstance(ranks, Mapping) and name not in ranks:
            raise ValueError(f"ranks name no rank for module {name!r} (they cover {list(ranks)})")
        spec = ranks[name] if isinstance(ranks, Mapping) else ranks
        r = spec(shape) if callable(spec) else spec
        try:
            setattr(parent, child, FLoRA(base, r, scale, dropout, flat))
        except ValueError as exc:
            raise ValueError(f"module {name!r}: {exc}") from None
    return names


def flora_modules(model: nn.Module) -> dict[str, FLoRA]:
    return {n: m for n, m in model.named_modules() if isinstance(m, FLoRA)}


def set_merged(model: nn.Module, merged: bool) -> None:
    for m in flora_modules(model).values():
        m.merge() if merged else m.unmerge()


def adapter_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """Only the adapter tensors (cores and factors), keyed by their qualified names."""
    return {
        f"{name}.{k}": v.detach().contiguous()
        for name, m in flora_modules(model).items()
        for k, v in m.named_parameters()
        if not k.startswith("base.")
    }


def save_adapters(model: nn.Module, path: str | Path) -> None:
    """Write the adapter weights (not the base model) to a safetensors file, atomically."""
    if any(m.merged for m in flora_modules(model).values()):
        raise ValueError("unmerge the adapters before saving them: merged updates live in the base")
    save_safetensors(path, adapter_state_dict(model))


def load_adapters(model: nn.Module, path: str | Path) -> None:
    """Load adapter weights into a model already wrapped with the same pattern and ranks."""
    params = dict(model.named_parameters())
    load_tensors_into({k: params[k] for k in adapter_state_dict(model)}, path, "model's adapters")
