"""One federated round of SparsyFed (Algorithm 1) in plain torch, and the in-process loop.

The same `client_round` and `fedavg` run under the in-process loop here and under Flower
(`flower_app.py`), so the two engines give the same global model for the same seed.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

from . import data
from .baselines import MethodSpec, method_spec
from .config import Config
from .models import build_model
from .powerprop import reset_activation_thresholds, sparsy_layers
from .sparsity import (
    aggregation_regrowth,
    count_nonzeros,
    global_magnitude_prune,
    iou,
    layer_densities,
    mean_pairwise_iou,
    prunable_masks,
    regrowth,
)

State = dict[str, torch.Tensor]


def lr_at(cfg: Config, server_round: int) -> float:
    """Exponential schedule lr_t = lr0 (lr_final/lr0)^(t/T), t = 1..T.

    As the official `LRScheduler` (warmup_rounds = 0) with Flower's 1-based round: round 1
    already trains at lr0 (lr_final/lr0)^(1/T) < lr0, and round T at exactly lr_final.
    """
    frac = server_round / cfg.rounds
    return cfg.lr0 * (cfg.lr_final / cfg.lr0) ** frac


def sample_clients(cfg: Config, server_round: int) -> list[int]:
    """The clients of round t: a uniform sample without replacement, fixed by (seed, t)."""
    rng = np.random.default_rng([cfg.seed, server_round])
    return sorted(rng.choice(cfg.n_clients, cfg.clients_per_round, replace=False).tolist())


@functools.lru_cache(maxsize=4)
def load_split(
    cfg_key: tuple,
) -> tuple[data.Dataset, data.Dataset, list[np.ndarray], data.Dataset | None]:
    """Train/test data, the client split and the validation set (None without one); cached:
    every client of a run reads it. The validation set is held out before the split."""
    dataset, data_dir, seed, n_clients, alpha, split, val_fraction = cfg_key
    if dataset == "digits":
        train, test = data.load_digits(seed)
    else:
        if dataset == "synth_cifar10" and not (Path(data_dir) / "test_batch").exists():
            data.write_synthetic_cifar10(data_dir)
        train, test = data.load_cifar10(data_dir)
    val = None
    if val_fraction > 0:
        keep, held = data.validation_holdout(train[1].numpy(), val_fraction, seed)
        val = (train[0][held], train[1][held])
        train = (train[0][keep], train[1][keep])
    parts = data.partition(train[1].numpy(), n_clients, alpha, seed, split)
    return train, test, parts, val


def _split_key(cfg: Config) -> tuple:
    return (cfg.dataset, cfg.data_dir, cfg.seed, cfg.n_clients, cfg.alpha, cfg.split,
            cfg.val_fraction)  # fmt: skip


def split_of(cfg: Config) -> tuple[data.Dataset, data.Dataset, list[np.ndarray]]:
    """(training set the clients share, test set, client index lists)."""
    return load_split(_split_key(cfg))[:3]


def validation_of(cfg: Config) -> data.Dataset | None:
    """The held-out validation set (cfg.val_fraction > 0), else None."""
    return load_split(_split_key(cfg))[3]


def new_model(cfg: Config) -> nn.Module:
    spec = method_spec(cfg)
    model = build_model(cfg.arch, spec.beta, spec.act_prune, cfg.seed, cfg.resnet_width)
    return model.to(cfg.device)


def state_of(model: nn.Module) -> State:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def local_train(
    model: nn.Module,
    state: State,
    x: torch.Tensor,
    y: torch.Tensor,
    lr: float,
    cfg: Config,
    spec: MethodSpec,
    gen: torch.Generator,
) -> State:
    """Client step of Algorithm 1: local SGD from the global omega, then prune omega to s.

    With spec.fixed_mask (FLASH) the gradient of every weight that arrived as zero is zeroed,
    so the received mask survives local training (weight decay leaves zeros at zero).
    """
    model.load_state_dict(state)
    reset_activation_thresholds(model)
    model.train()
    frozen = [(m.weight, m.weight.detach() != 0) for _, m in sparsy_layers(model)]
    opt = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=cfg.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(cfg.local_epochs):
        order = torch.randperm(len(y), generator=gen)
        for start in range(0, len(y), cfg.batch_size):
            idx = order[start : start + cfg.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x[idx].to(cfg.device)), y[idx].to(cfg.device))
            loss.backward()
            if spec.fixed_mask:
                for weight, keep in frozen:
                    weight.grad.mul_(keep)
            opt.step()
    global_magnitude_prune(model, spec.sparsity)
    return state_of(model)


def client_round(
    cfg: Config, model: nn.Module, state: State, client: int, server_round: int
) -> tuple[State, int]:
    """Client `client` in round `server_round`: its data, its batch order, its update."""
    (xtr, ytr), _, parts = split_of(cfg)
    idx = torch.from_numpy(parts[client])
    gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + server_round * 1_009 + client)
    new = local_train(
        model, state, xtr[idx], ytr[idx], lr_at(cfg, server_round), cfg, method_spec(cfg), gen
    )
    return new, len(idx)


def fedavg(states: list[State], n_examples: list[int]) -> State:
    """Sample-weighted mean of the client states (FedAvg; same arithmetic as Flower's)."""
    total = float(sum(n_examples))
    out: State = {}
    for state, n in zip(states, n_examples, strict=True):
        for key, value in state.items():
            if not value.is_floating_point():  # BatchNorm's step counter
                out.setdefault(key, value.clone())
                continue
            term = value * (n / total)
            out[key] = term if key not in out else out[key] + term
    return out


@torch.no_grad()
def accuracy(model: nn.Module, state: State, x: torch.Tensor, y: torch.Tensor) -> float:
    model.load_state_dict(state)
    model.eval()
    correct = 0
    for start in range(0, len(y), 500):
        logits = model(x[start : start + 500].to(model_device(model)))
        correct += int((logits.argmax(1).cpu() == y[start : start + 500]).sum())
    return correct / len(y)


def model_device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def pruned_copy(model: nn.Module, state: State, sparsity: float) -> State:
    """The aggregate pruned back to the target sparsity (what a sparse deployment would use)."""
    model.load_state_dict(state)
    global_magnitude_prune(model, sparsity)
    return state_of(model)


def run_federated(
    cfg: Config, on_round: Callable[[int, dict], None] | None = None
) -> tuple[State, dict[str, list[float]], dict[str, float]]:
    """The in-process engine: T rounds of sample -> local train + prune -> FedAvg -> metrics.

    Returns the final global state, per-round history and the final per-layer densities.
    """
    spec = method_spec(cfg)
    _, (xte, yte), _ = split_of(cfg)
    model = new_model(cfg)
    names = [f"{n}.weight" for n, _ in sparsy_layers(model)]
    global_state = state_of(model)
    prev_mask = prunable_masks(global_state, names)
    hist: dict[str, list[float]] = {
        k: []
        for k in (
            "round", "regrowth", "mask_regrowth", "density", "upload_density", "iou",
            "uploaded_nonzeros", "seconds",
            "eval_round", "acc_dense", "acc_pruned",
        )
    }  # fmt: skip
    hist["acc_init"] = [accuracy(model, global_state, xte, yte)]  # the untrained floor
    init_mask = prunable_masks(pruned_copy(model, global_state, spec.sparsity), names)
    for t in range(1, cfg.rounds + 1):
        tic = time.perf_counter()
        replies = [client_round(cfg, model, global_state, c, t) for c in sample_clients(cfg, t)]
        states = [s for s, _ in replies]
        global_state = fedavg(states, [n for _, n in replies])
        mask = prunable_masks(global_state, names)
        uploads = [prunable_masks(s, names) for s in states]
        hist["round"].append(t)
        hist["regrowth"].append(aggregation_regrowth(uploads, mask))
        hist["mask_regrowth"].append(regrowth(prev_mask, mask))
        hist["density"].append(float(mask.float().mean()))
        hist["upload_density"].append(float(torch.stack(uploads).float().mean()))
        hist["iou"].append(mean_pairwise_iou(uploads))
        hist["uploaded_nonzeros"].append(float(sum(count_nonzeros(s) for s in states)))
        hist["seconds"].append(time.perf_counter() - tic)
        prev_mask = mask
        if t % cfg.eval_every == 0 or t == cfg.rounds:
            hist["eval_round"].append(t)
            hist["acc_dense"].append(accuracy(model, global_state, xte, yte))
            pruned = pruned_copy(model, global_state, spec.sparsity)
            hist["acc_pruned"].append(accuracy(model, pruned, xte, yte))
        if on_round is not None:
            on_round(t, {k: v[-1] for k, v in hist.items() if v})
    # 1.0: the final mask is magnitude pruning of the untrained init (pruning at init)
    hist["init_mask_iou"] = [iou(init_mask, prunable_masks(global_state, names))]
    if (val := validation_of(cfg)) is not None:  # learning-rate tuning reads this, never test
        hist["acc_val"] = [accuracy(model, global_state, *val)]
    model.load_state_dict(global_state)
    return global_state, hist, layer_densities(model)
