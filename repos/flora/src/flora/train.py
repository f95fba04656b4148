"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

structure: fit a synthetic update of one Conv2d by MSE on random inputs (relative error vs rank).
transfer: pretrain a backbone on digits 0-4, adapt it to new tasks, report validation and test
accuracy (%) at an equal trainable-parameter budget.

`train` saves what it fitted (safetensors): structure_<target>_r<rank> (the adapter of each fit),
<backbone>_pretrained (the backbone after pretraining) and <backbone>_<task> (the trainable
parameters after fine-tuning); `evaluate` rebuilds the models from config.json, loads them and
measures them again.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from . import data, models
from .adapter import apply_flora, set_merged
from .baselines import Ranks, mean_rank, peft_wrap, prepare, rank_for_budget, trainable_count
from .config import Config, validate
from .results import atomic_write_json, read_config, save_safetensors
from .runtime import resolve_device
from .weights import load_state, load_trainable, save_trainable, trainable_state

_PRETRAINED: dict[tuple, dict[str, torch.Tensor]] = {}
_RANKS: dict[tuple, Ranks] = {}


def _bar(iterable, cfg: Config, desc: str):
    return tqdm(iterable, desc=desc, leave=False, disable=cfg.quiet or not sys.stderr.isatty())


def structure_model(
    cfg: Config, method: str, level: int
) -> tuple[nn.Module, Callable[[], torch.Tensor], nn.Conv2d]:
    """A Conv2d(c, c, k) (seeded) carrying `method`'s adapter at rank `level`, its dW, and the
    frozen Conv2d itself."""
    c, k = cfg.struct_channels, cfg.struct_kernel
    torch.manual_seed(cfg.seed)
    holder = nn.Sequential(OrderedDict(conv=nn.Conv2d(c, c, k))).to(cfg.device)
    base = holder.conv
    if method == "flora":
        apply_flora(holder, "conv", (level, level, k, k), scale=1.0)
        return holder, holder.conv.delta_weight, base
    # alpha = r makes peft's scale 1, like FLoRA's here
    holder = peft_wrap(holder, method, "conv", level, float(level), head=None)
    layer = holder.base_model.model.conv
    return holder, lambda: layer.get_delta_weight("default"), base


def relative_error(delta: Callable[[], torch.Tensor], target: torch.Tensor) -> float:
    with torch.no_grad():
        return float((delta() - target).norm() / target.norm())


def structure_fit(
    cfg: Config, method: str, target: torch.Tensor, level: int
) -> tuple[float, int, nn.Module]:
    """Fit dW* of a Conv2d(c, c, k) with `method` at rank `level`; return (relative error,
    params, the fitted model)."""
    c, k = cfg.struct_channels, cfg.struct_kernel
    holder, delta, base = structure_model(cfg, method, level)
    teacher_w = base.weight.detach() + target
    bias = base.bias.detach()
    params = list(trainable_state(holder).values())
    opt = torch.optim.Adam(params, lr=cfg.struct_lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.struct_steps)
    g = torch.Generator(device=cfg.device).manual_seed(cfg.seed)
    for _ in _bar(range(cfg.struct_steps), cfg, f"{method} r={level}"):
        # k x k patches make the conv's output 1 x 1: the MSE is then ||(dW - dW*) x||^2.
        x = torch.randn(cfg.struct_batch, c, k, k, generator=g, device=cfg.device)
        loss = F.mse_loss(holder(x), F.conv2d(x, teacher_w, bias))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return relative_error(delta, target), sum(p.numel() for p in params), holder


def structure_targets(cfg: Config) -> dict[str, torch.Tensor]:
    shape = (cfg.struct_channels, cfg.struct_channels, cfg.struct_kernel, cfg.struct_kernel)
    return {
        "tucker": data.tucker_target(shape, cfg.teacher_tucker_ranks, cfg.seed).to(cfg.device),
        "matrix": data.matrix_rank_target(shape, cfg.teacher_matrix_rank, cfg.seed).to(cfg.device),
    }


def run_structure(cfg: Config, workdir: Path, save_weights: bool) -> dict[str, float]:
    metrics = {}
    for name, target in structure_targets(cfg).items():
        for level in cfg.struct_levels:
            err, n, holder = structure_fit(cfg, cfg.method, target, level)
            metrics[f"{name}_relerr_r{level}"] = err
            metrics[f"{name}_params_r{level}"] = float(n)
            if save_weights:
                save_trainable(holder, workdir / f"structure_{name}_r{level}.safetensors")
    return metrics


def input_channels(backbone: str, cfg: Config) -> int:
    """RGB for the ConvNeXt and for any backbone adapted to an image folder (digits are repeated
    to three channels for its pretraining); grey digits otherwise."""
    return 3 if backbone == "convnext" or cfg.data_dir else 1


def build_backbone(backbone: str, cfg: Config, n_classes: int = 5) -> nn.Module:
    channels = input_channels(backbone, cfg)
    if backbone == "cnn":
        return models.SmallCNN(n_classes, channels)
    if backbone == "mlp":
        return models.MLP(n_classes, in_features=channels * cfg.image_size**2)
    if backbone == "vit":
        return models.ViT(n_classes, cfg.image_size, channels)
    return models.ConvNeXt(n_classes, cfg.convnext_depths, cfg.convnext_dims, cfg.checkpoint)


def fit_classifier(
    model: nn.Module, task: dict, epochs: int, lr: float, cfg: Config, desc: str
) -> dict[str, float]:
    """Adam on the trainable parameters; returns validation and test accuracy in % (merged)."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    x, y = task["x_train"].to(cfg.device), task["y_train"].to(cfg.device)
    g = torch.Generator().manual_seed(cfg.seed)
    if cfg.shuffle_labels:
        y = y[torch.randperm(len(y), generator=g).to(cfg.device)]
    bar = _bar(range(epochs), cfg, desc)
    for _ in bar:
        model.train()
        for idx in torch.randperm(len(y), generator=g).split(cfg.batch_size):
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
    return split_accuracy(model, task, cfg)


def split_accuracy(model: nn.Module, task: dict, cfg: Config) -> dict[str, float]:
    """Validation and test accuracy in % (adapters merged while measuring)."""
    return {
        split: accuracy(model, task[f"x_{split}"].to(cfg.device), task[f"y_{split}"].to(cfg.device))
        for split in ("val", "test")
    }


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    set_merged(model, True)
    correct = sum(
        int((model(xb).argmax(1) == yb).sum()) for xb, yb in zip(x.split(256), y.split(256))
    )
    set_merged(model, False)
    return 100.0 * correct / len(y)


def pretrained(backbone: str, cfg: Config, tasks: dict) -> dict[str, torch.Tensor]:
    """Weights after pretraining on digits 0-4 (cached per process: every method starts from them)."""
    key = (backbone, cfg.seed, cfg.image_size, cfg.pretrain_epochs, cfg.batch_size, cfg.pretrain_lr,
           cfg.convnext_depths, cfg.convnext_dims, cfg.checkpoint, cfg.device,
           input_channels(backbone, cfg))  # fmt: skip
    if key not in _PRETRAINED:
        torch.manual_seed(cfg.seed)
        model = build_backbone(backbone, cfg).to(cfg.device)
        if not (backbone == "convnext" and cfg.checkpoint):
            pre = dataclasses.replace(cfg, shuffle_labels=False)
            fit_classifier(model, tasks["pretrain"], cfg.pretrain_epochs, cfg.pretrain_lr, pre,
                           f"pretrain {backbone}")  # fmt: skip
        _PRETRAINED[key] = copy.deepcopy(model.state_dict())
    return _PRETRAINED[key]


def method_rank(backbone: str, cfg: Config, model: nn.Module) -> Ranks:
    """The method's ranks at LoRA's budget for cfg.lora_rank, one per adapted layer for the ranked
    adapters (cached: they depend on shapes only)."""
    key = (backbone, cfg.method, cfg.lora_rank, cfg.image_size, cfg.convnext_depths,
           cfg.convnext_dims, cfg.checkpoint, cfg.data_dir)  # fmt: skip
    if key not in _RANKS:
        pattern, head = models.ADAPTED[backbone], models.HEAD[backbone]
        _RANKS[key] = rank_for_budget(cfg.method, model, pattern, head, cfg.lora_rank)
    return _RANKS[key]


def transfer_tasks(cfg: Config, backbone: str) -> tuple[dict, dict]:
    """(the digits tasks, the target tasks adapted to: shift and rotated, or the image folder)."""
    tasks = data.digits_tasks(cfg.seed, cfg.image_size, input_channels(backbone, cfg))
    if cfg.data_dir:
        return tasks, {"folder": data.folder_task(cfg.data_dir, cfg.image_size, cfg.seed)}
    return tasks, {"shift": tasks["shift"], "rotated": tasks["rotated"]}


def adapted_model(
    cfg: Config, backbone: str, name: str, task: dict, state: dict[str, torch.Tensor]
) -> tuple[nn.Module, Ranks]:
    """The pretrained backbone set up for cfg.method on target task `name` (a new label space
    gets a new, seeded head), and the method's ranks at the budget."""
    model = build_backbone(backbone, cfg).to(cfg.device)
    model.load_state_dict(state)
    n_classes = int(task["y_train"].max()) + 1
    if name != "rotated":  # a new label space gets a new head
        models.reset_head(model, n_classes, cfg.seed)
    model.to(cfg.device)
    rank = method_rank(backbone, cfg, model)
    torch.manual_seed(cfg.seed)  # adapter init independent of the rank search's draws
    model = prepare(cfg.method, model, models.ADAPTED[backbone], models.HEAD[backbone],
                    rank, cfg.scale).to(cfg.device)  # fmt: skip
    return model, rank


def task_metrics(
    backbone: str, name: str, accs: dict[str, float], model: nn.Module, rank: Ranks
) -> dict[str, float]:
    """Accuracies, the trainable count and the mean rank over the adapted layers."""
    return {
        f"{backbone}_{name}_acc": accs["test"],
        f"{backbone}_{name}_val_acc": accs["val"],
        f"{backbone}_trainable": float(trainable_count(model)),
        f"{backbone}_rank": mean_rank(rank),
    }


def run_transfer(cfg: Config, workdir: Path, save_weights: bool) -> dict[str, float]:
    metrics = {}
    for backbone in cfg.backbones:
        tasks, targets = transfer_tasks(cfg, backbone)
        state = pretrained(backbone, cfg, tasks)
        if save_weights:
            save_safetensors(workdir / f"{backbone}_pretrained.safetensors", state)
        for name, task in targets.items():
            model, rank = adapted_model(cfg, backbone, name, task, state)
            torch.manual_seed(cfg.seed)
            accs = fit_classifier(
                model, task, cfg.epochs, cfg.lr, cfg, f"{cfg.method} {backbone} {name}"
            )
            metrics.update(task_metrics(backbone, name, accs, model, rank))
            if save_weights:
                save_trainable(model, workdir / f"{backbone}_{name}.safetensors")
    return metrics


def train_and_evaluate(
    cfg: Config, workdir: str | Path, save_weights: bool = True
) -> dict[str, float]:
    """Run cfg.method on cfg.task for cfg.seed and return its metrics; writes workdir/config.json
    first, then (with save_weights) the fitted weights, then metrics.json."""
    validate(cfg)
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    torch.set_num_threads(cfg.threads)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    if cfg.task == "structure":
        metrics = run_structure(cfg, workdir, save_weights)
    else:
        metrics = run_transfer(cfg, workdir, save_weights)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Rebuild the models a previous `train` fitted in workdir (its config.json), load their saved
    weights and measure them again: relative errors (structure) or val/test accuracy (transfer).
    Device, threads and progress come from `cfg`; every unreadable file is a ValueError naming it."""
    workdir = Path(workdir)
    run = read_config(workdir / "config.json", Config, validate)
    run = dataclasses.replace(
        run, device=resolve_device(cfg.device), threads=cfg.threads, quiet=cfg.quiet
    )
    torch.set_num_threads(run.threads)
    if run.task == "structure":
        return evaluate_structure(run, workdir)
    return evaluate_transfer(run, workdir)


def evaluate_structure(cfg: Config, workdir: Path) -> dict[str, float]:
    metrics = {}
    for name, target in structure_targets(cfg).items():
        for level in cfg.struct_levels:
            holder, delta, _ = structure_model(cfg, cfg.method, level)
            load_trainable(holder, workdir / f"structure_{name}_r{level}.safetensors")
            metrics[f"{name}_relerr_r{level}"] = relative_error(delta, target)
            metrics[f"{name}_params_r{level}"] = float(trainable_count(holder))
    return metrics


def evaluate_transfer(cfg: Config, workdir: Path) -> dict[str, float]:
    metrics = {}
    for backbone in cfg.backbones:
        _, targets = transfer_tasks(cfg, backbone)
        base = build_backbone(backbone, cfg).to(cfg.device)
        load_state(base, workdir / f"{backbone}_pretrained.safetensors")
        for name, task in targets.items():
            model, rank = adapted_model(cfg, backbone, name, task, base.state_dict())
            load_trainable(model, workdir / f"{backbone}_{name}.safetensors")
            accs = split_accuracy(model, task, cfg)
            metrics.update(task_metrics(backbone, name, accs, model, rank))
    return metrics
