"""What every method of one seed shares (the Stage) and the policy checkpoints: the bottom of
the training modules, imported by train.py and hf.py alike."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import torch
from safetensors.torch import load_model, save_model

from .data import Problem, Tokenizer, Tree
from .results import load_safetensors


@dataclasses.dataclass
class Stage:
    """What every method of one seed shares: the SFT policy (also the frozen reference), the trees
    with the reference's per-step log-probs of every response, and the test problems."""

    tok: Tokenizer
    sft: torch.nn.Module
    train_trees: list[Tree]
    heldout_trees: list[Tree]
    test_id: list[Problem]
    test_ood: list[Problem]
    val: list[Problem]
    train_ref: list[torch.Tensor]
    heldout_ref: list[torch.Tensor]
    in_place: bool = False
    """Train `sft` itself instead of a copy (LoRA: the adapters are the only trained weights)."""


def save_weights(model: torch.nn.Module, path: Path) -> None:
    """A policy's weights as safetensors (tied embeddings stored once), written atomically."""
    tmp = path.with_name(f".{path.name}.tmp")
    save_model(model, str(tmp))
    os.replace(tmp, path)


def load_weights(model: torch.nn.Module, path: Path, device: str) -> torch.nn.Module:
    """Load save_weights' checkpoint into `model`; a missing, corrupt or mismatched file is a
    ValueError naming it."""
    load_safetensors(path)  # a missing or unreadable file, named
    try:
        load_model(model, str(path), strict=True, device=device)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ValueError(f"{path}: does not fit the run's policy ({first})") from None
    return model
