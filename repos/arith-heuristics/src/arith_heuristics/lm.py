"""Training the number-as-token model from scratch, with checkpoints along the way."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from torch import nn

from .config import Config
from .data import Prompts, Vocab, sampling_weights
from .model import last_logits
from .results import load_safetensors
from .runtime import progress, stage


def checkpoint_steps(cfg: Config) -> list[int]:
    """Steps after which a checkpoint is saved, evenly spaced; the last is the final model."""
    return sorted(
        {max(1, round(cfg.steps * (i + 1) / cfg.n_checkpoints)) for i in range(cfg.n_checkpoints)}
    )


def save_state(model: nn.Module, path: Path) -> None:
    """safetensors checkpoint, written atomically (temporary file, then rename)."""
    tmp = path.with_name(f".{path.name}.tmp")
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    # GPT-2 ties the unembedding to the embedding; safetensors refuses shared storage
    state.pop("lm_head.weight", None)
    save_file(state, str(tmp))
    tmp.replace(path)


def load_state(model: nn.Module, path: Path) -> nn.Module:
    """Load a `save_state` checkpoint into model; ValueError naming the file when it is corrupt or
    does not fit the model (the tied unembedding is the only tensor it may lack)."""
    state = load_safetensors(path)
    try:
        missing, unexpected = model.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # a tensor of the wrong shape
        first = str(exc).strip().splitlines()[-1].strip()
        raise ValueError(f"{path}: checkpoint does not fit this model ({first})") from None
    missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise ValueError(
            f"{path}: checkpoint does not fit this model (missing {missing[:3]}, unexpected "
            f"{unexpected[:3]})"
        )
    model.tie_weights()
    return model.eval()


def train(
    model: nn.Module, train_set: Prompts, vocab: Vocab, cfg: Config, workdir: Path
) -> list[Path]:
    """AdamW on the cross-entropy of the result token; returns the checkpoint paths in order."""
    gen = torch.Generator().manual_seed(cfg.seed)
    tokens = train_set.tokens(vocab).to(cfg.device)
    targets = torch.as_tensor(train_set.result, device=cfg.device)
    weights = torch.as_tensor(sampling_weights(train_set, cfg.zipf_a))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    warm = max(1, cfg.steps // 20)

    def schedule(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, cfg.steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    saves, paths = set(checkpoint_steps(cfg)), []
    model.train()
    for step in progress(range(cfg.steps), f"train (seed {cfg.seed})", cfg.quiet):
        idx = torch.multinomial(weights, cfg.batch, replacement=True, generator=gen)
        loss = nn.functional.cross_entropy(last_logits(model, tokens[idx]), targets[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step + 1 in saves:
            path = workdir / f"checkpoint_{step + 1:06d}.safetensors"
            save_state(model, path)
            paths.append(path)
            stage(f"train (seed {cfg.seed}): step {step + 1}, loss {loss.item():.3f}", cfg.quiet)
    return paths


@torch.no_grad()
def predict(model: nn.Module, prompts: Prompts, vocab: Vocab, device: str, batch: int = 4096):
    """Greedy result token of every prompt (argmax over number tokens)."""
    model.eval()
    tokens = prompts.tokens(vocab).to(device)
    out = [
        last_logits(model, tokens[i : i + batch])[:, : vocab.n_numbers].argmax(-1).cpu()
        for i in range(0, len(tokens), batch)
    ]
    return torch.cat(out).numpy() if out else np.zeros(0, dtype=np.int64)


def accuracy(model: nn.Module, prompts: Prompts, vocab: Vocab, device: str) -> float:
    return float((predict(model, prompts, vocab, device) == prompts.result).mean())
