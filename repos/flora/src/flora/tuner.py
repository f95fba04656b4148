"""A peft-style front end: `FLoRAConfig`, `get_flora_model`, `save_pretrained`/`from_pretrained`
and `merge_and_unload`, for any torch model (transformers and timm included).

    config = FLoRAConfig(target_modules=["c_attn", "c_fc"], r=8, scale=2.0)
    model = get_flora_model(gpt2, config)       # wraps every matching Linear/ConvNd/HF Conv1D
    model.save_pretrained("adapter/")           # adapter_config.json + adapter_model.safetensors
    model = FLoRAModel.from_pretrained(fresh_gpt2, "adapter/")
    plain = model.merge_and_unload()            # the base model with W0 + dW, no wrappers left
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from torch import nn

from .adapter import apply_flora, flora_modules, load_adapters, save_adapters, set_merged
from .results import atomic_write_json, read_json

CONFIG_NAME, WEIGHTS_NAME = "adapter_config.json", "adapter_model.safetensors"


@dataclasses.dataclass(frozen=True)
class FLoRAConfig:
    target_modules: tuple[str, ...] | str
    """Module names: a list matches a name or a name's last components (peft's rule), a string is
    a regular expression the whole qualified name must match."""
    r: int = 8
    """Rank of the channel modes (out, in), clipped to each mode's size."""
    kernel_rank: int = 0
    """Rank of every kernel mode of a convolution; 0 keeps them at full rank (the official
    ConvNeXt example uses 2 for 7x7 kernels)."""
    scale: float = 1.0
    """s in dW = s * G x_1 A1 ... (the LLM code's alpha / r)."""
    dropout: float = 0.0
    """Dropout on the adapter branch's input."""

    def __post_init__(self):
        if self.r < 1 or self.kernel_rank < 0:
            raise ValueError(
                f"r must be >= 1 and kernel_rank >= 0, got {self.r}, {self.kernel_rank}"
            )
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")

    def pattern(self) -> str:
        if isinstance(self.target_modules, str):
            return self.target_modules
        names = "|".join(re.escape(n) for n in self.target_modules)
        return rf"(.*\.)?({names})"

    def ranks(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        kernel = [min(self.kernel_rank, k) if self.kernel_rank else k for k in shape[2:]]
        return (min(self.r, shape[0]), min(self.r, shape[1]), *kernel)


class FLoRAModel(nn.Module):
    """A model whose target modules carry FLoRA adapters; calls go through to the wrapped model."""

    def __init__(self, model: nn.Module, config: FLoRAConfig):
        super().__init__()
        self.config = config
        self.targets = apply_flora(
            model, config.pattern(), config.ranks, config.scale, config.dropout
        )
        self.model = model

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    def trainable_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def save_pretrained(self, folder: str | Path) -> None:
        """Write the adapter's config and weights (not the base model) into `folder`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_adapters(self.model, folder / WEIGHTS_NAME)
        config = dataclasses.asdict(self.config)
        if not isinstance(self.config.target_modules, str):
            config["target_modules"] = list(self.config.target_modules)
        atomic_write_json(folder / CONFIG_NAME, config)

    @classmethod
    def from_pretrained(cls, model: nn.Module, folder: str | Path) -> FLoRAModel:
        """Wrap `model` as the saved config says and load the saved adapter weights."""
        folder = Path(folder)
        for name in (CONFIG_NAME, WEIGHTS_NAME):
            if not (folder / name).is_file():
                raise ValueError(
                    f"adapter folder {folder} has no {name} (written by save_pretrained)"
                )
        raw = read_json(folder / CONFIG_NAME, "adapter config")
        try:
            if isinstance(raw.get("target_modules"), list):
                raw["target_modules"] = tuple(raw["target_modules"])
            config = FLoRAConfig(**raw)
        except (AttributeError, TypeError) as exc:
            raise ValueError(
                f"{folder / CONFIG_NAME} is not a FLoRA adapter config: {exc}"
            ) from None
        wrapped = cls(model, config)
        load_adapters(wrapped.model, folder / WEIGHTS_NAME)
        return wrapped

    def merge_and_unload(self) -> nn.Module:
        """Fold every dW into its base weight and put the plain layers back; returns the model."""
        set_merged(self.model, True)
        for name, layer in flora_modules(self.model).items():
            parent_name, _, child = name.rpartition(".")
            setattr(self.model.get_submodule(parent_name), child, layer.base)
        return self.model


def get_flora_model(model: nn.Module, config: FLoRAConfig) -> FLoRAModel:
    """Freeze `model` and add FLoRA adapters to its `config.target_modules` (peft's get_peft_model)."""
    return FLoRAModel(model, config)
