"""safetensors files of a run: a model's trainable parameters saved and loaded by name, and tensors
loaded into a model (what `train` writes and `eval` reads back; errors name the file)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from .results import load_safetensors, save_safetensors


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The parameters that train (requires_grad), by qualified name."""
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


def save_trainable(model: nn.Module, path: str | Path) -> None:
    save_safetensors(path, trainable_state(model))


def load_tensors_into(params: dict[str, torch.Tensor], path: str | Path, what: str) -> None:
    """Copy the tensors of `path` into `params` (same names, same shapes), or raise ValueError
    naming the file and what does not fit."""
    saved = load_safetensors(path)
    if saved.keys() != params.keys():
        missing, extra = sorted(params.keys() - saved.keys()), sorted(saved.keys() - params.keys())
        raise ValueError(
            f"{path}: does not fit the {what} (missing {missing[:3]}, extra {extra[:3]})"
        )
    with torch.no_grad():
        for k, v in saved.items():
            if params[k].shape != v.shape:
                raise ValueError(
                    f"{path}: {k} has shape {tuple(v.shape)}, the {what} needs "
                    f"{tuple(params[k].shape)}"
                )
            params[k].copy_(v)


def load_trainable(model: nn.Module, path: str | Path) -> None:
    """Load what save_trainable wrote into a model set up the same way (same method and ranks)."""
    load_tensors_into(trainable_state(model), path, "model's trainable parameters")


def load_state(model: nn.Module, path: str | Path) -> None:
    """Load a full state dict (every parameter and buffer) that save_safetensors wrote."""
    load_tensors_into(dict(model.state_dict()), path, "model")
