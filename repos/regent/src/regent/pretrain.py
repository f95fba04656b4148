"""REGENT models outside the method's maths: build one, pretrain it on retrieval contexts, save and
reload checkpoints, and act with it at evaluation. Shared by the families (train.py) and
Meta-World (meta_world.py); imports nothing above it in the package."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save as safetensors_bytes
from tqdm.auto import tqdm

from .config import Config
from .data import Demos
from .regent import RegentModel, build_context
from .results import atomic_write_bytes, load_safetensors
from .retrieval import NORMALISERS, Retriever, knn_other_episodes, p95_normaliser

GRID_ACTIONS = 4
Policy = Callable[[np.ndarray, np.ndarray, list], np.ndarray]


def act_size(family: str, cfg: Config) -> int:
    """Continuous action dimensions, or the discrete vocabulary the model outputs."""
    if family == "metaworld":
        return 4
    return (cfg.action_vocab or GRID_ACTIONS) if family == "grid" else 2


def pretraining_batch(
    demos_per_task: list[Demos], n: int, normaliser: str
) -> tuple[dict[str, torch.Tensor], list[float]]:
    """Every row of every training task as a query, with n neighbours from other episodes; also
    each task's ratio of the official normaliser (p95 of the context's distances to the first
    retrieved state) to ours (p95 of 1-NN distances), as used, i.e. after the fallback to 1 for
    a zero percentile."""
    parts, ratios = [], []
    for demos in demos_per_task:
        _, idx = knn_other_episodes(demos, n)
        norms = {kind: p95_normaliser(demos, kind, n) for kind in NORMALISERS}
        ratios.append(norms["context"] / norms["nn1"])
        parts.append(build_context(demos, idx, demos.obs, demos.rew, demos.act, norms[normaliser]))
    return {k: torch.cat([p[k] for p in parts]) for k in parts[0]}, ratios


def show_progress(cfg: Config) -> bool:
    return not cfg.quiet and sys.stderr.isatty()


def new_model(obs_dim: int, family: str, cfg: Config) -> RegentModel:
    """A freshly initialised REGENT transformer (the same weights for the same seed)."""
    torch.manual_seed(cfg.seed)
    return RegentModel(
        obs_dim,
        act_size(family, cfg),
        family == "grid",
        cfg.d_model,
        cfg.n_layers,
        cfg.n_heads,
        cfg.n_retrieved + 1,
    )


def save_state(module: torch.nn.Module, path: Path) -> None:
    """A module's weights as a safetensors checkpoint, written atomically."""
    state = {k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()}
    atomic_write_bytes(path, safetensors_bytes(state))


def load_state(module: torch.nn.Module, path: Path) -> torch.nn.Module:
    """Load a checkpoint into `module`; a missing, corrupt or mismatched file is a ValueError
    naming it."""
    state = load_safetensors(path)
    try:
        module.load_state_dict(state)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ValueError(f"{path}: does not fit the model of the run's config ({first})") from None
    return module.eval()


def pretrain(
    data: dict[str, torch.Tensor], family: str, cfg: Config, interpolate: bool, ckpt: Path
) -> tuple[RegentModel, list[float]]:
    """Train a REGENT model on pretraining contexts; loss over all context positions."""
    model = new_model(data["obs"].shape[-1], family, cfg).to(cfg.device)
    if cfg.resume and ckpt.exists():
        return load_state(model.cpu(), ckpt), []
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    losses = []
    bar = tqdm(
        range(cfg.steps),
        desc=f"{family} {'REGENT' if interpolate else 'no-interp'}",
        disable=not show_progress(cfg),
        leave=False,
    )
    n_rows = len(data["obs"])
    for _ in bar:
        rows = torch.randint(n_rows, (cfg.batch_size,), generator=gen)
        batch = {k: v[rows].to(cfg.device) for k, v in data.items()}
        loss = model.loss(batch, interpolate, cfg.lam, cfg.cont_scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
    model = model.cpu().eval()
    save_state(model, ckpt)
    return model, losses


def regent_policy(
    model: RegentModel, retriever: Retriever, n: int, interpolate: bool, cfg: Config
) -> Policy:
    """REGENT at evaluation: retrieve, build the context, act on the query position."""
    n_eff = min(n, len(retriever.demos))  # a single short demo can hold fewer than n states

    @torch.no_grad()
    def act(obs: np.ndarray, rew: np.ndarray, envs: list) -> np.ndarray:
        idx, _ = retriever.retrieve(obs, n_eff)
        batch = build_context(retriever.demos, idx, obs, rew, None, retriever.normaliser)
        out = model.predict(batch, interpolate, cfg.lam, cfg.cont_scale)[:, -1]
        if model.discrete:  # only the environment's actions; a larger vocabulary pads
            return out[:, :GRID_ACTIONS].argmax(-1).numpy()
        return out.clamp(-1, 1).numpy()

    return act
