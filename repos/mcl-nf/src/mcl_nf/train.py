"""train_and_evaluate(cfg, workdir) -> metrics: meta-train, then fit held-out signals sub-task by
sub-task with every method and score the whole signal (PSNR, SSIM) and forgetting."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save
from skimage.metrics import structural_similarity
from tqdm import tqdm

from . import baselines, data
from .config import Config, validate
from .modular import (
    Params,
    Siren,
    adapt,
    broadcast,
    fields,
    init_params,
    maml_outer_loss,
    point_losses,
)
from .results import atomic_write_bytes, atomic_write_json

METHODS = ("OL", "Naive", "EWC", "ER", "MOL", "MCL-NF", "MCL-NF+FIM")
CONTINUAL = ("Naive", "EWC", "ER")


def signals(cfg: Config, split: str, n: int, offset: int = 0) -> torch.Tensor:
    """Meta-training draws fresh procedural signals each step; test signals use disjoint seeds.
    With --image-folder, the last n_test images are the test split and the rest meta-train."""
    if cfg.image_folder:
        pool = data.load_image_folder(cfg.image_folder, cfg.image_size)
        if len(pool) <= cfg.n_test:
            raise ValueError(
                f"{cfg.image_folder} holds {len(pool)} images; need more than n_test={cfg.n_test}"
            )
        if split == "test":
            return pool[-cfg.n_test :]
        train = pool[: -cfg.n_test]
        return train[torch.arange(offset * n, offset * n + n) % len(train)]
    base = 1_000_003 * cfg.seed + (0 if split == "train" else 7_919_000)
    return data.procedural_images(n, cfg.image_size, base + offset)


def split_targets(images: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(n, H, H, 3) -> (n, t, m, 3): each sub-task's pixels, in the partition's order."""
    return images.reshape(images.shape[0], -1, 3)[:, index]


def meta_train(cfg: Config, hidden: int, modular: bool, desc: str) -> tuple[Siren, Params]:
    """MAML over signals. Modular: every sub-task block of every signal is one inner-loop task
    sharing theta_0 (all B * t modules vmapped at once). Single: the whole signal is one task."""
    module, theta0 = init_params(hidden, cfg.omega0, cfg.seed, cfg.device)
    theta0 = {k: v.requires_grad_() for k, v in theta0.items()}
    opt = torch.optim.Adam(theta0.values(), lr=cfg.meta_lr)
    coords, index = data.partition(cfg.image_size, cfg.grid)
    if not modular:
        coords, index = coords.reshape(1, -1, 2), index.reshape(1, -1)
    coords = coords.to(cfg.device)
    bar = tqdm(range(cfg.meta_steps), desc=desc, disable=cfg.quiet or not sys.stderr.isatty())
    for step in bar:
        batch = split_targets(signals(cfg, "train", cfg.meta_batch, step), index).to(cfg.device)
        t = batch.shape[1]
        x = coords.repeat(cfg.meta_batch, 1, 1)
        y = batch.reshape(cfg.meta_batch * t, -1, 3)
        loss = maml_outer_loss(module, theta0, x, y, cfg.inner_steps, cfg.inner_lr, cfg.first_order)
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(outer_mse=f"{loss.item():.4f}")
    return module, {k: v.detach() for k, v in theta0.items()}


def whole_signal(values: torch.Tensor) -> torch.Tensor:
    """Per-signal mean over every pixel of every sub-task: (n, t, m) -> (n,)."""
    return values.flatten(1).mean(1)


def mean_psnr(mse: torch.Tensor) -> float:
    return float(np.mean([data.psnr(v) for v in mse]))


def mean_ssim(pred: torch.Tensor, images: torch.Tensor, index: torch.Tensor) -> float:
    """SSIM of reassembled images (scikit-image, data range 1)."""
    n = images.shape[0]
    canvas = torch.zeros(n, images.shape[1] * images.shape[2], 3)
    canvas[:, index] = pred.detach().cpu().clamp(0, 1)
    canvas = canvas.reshape(images.shape).numpy()
    return float(
        np.mean(
            [
                structural_similarity(canvas[i], images[i].numpy(), channel_axis=-1, data_range=1.0)
                for i in range(n)
            ]
        )
    )


def evaluate_modular(cfg, module, theta0, coords, targets, images, index, fim) -> dict[str, float]:
    """Fit module k on sub-task k only (k = 1..t in order, no replay), recording each module's
    per-point error at every eval step; whole-signal PSNR at step s combines all modules at s."""
    n, t = targets.shape[:2]
    errors = {s: torch.zeros(n, t, targets.shape[2]) for s in cfg.eval_steps}
    finished: list[Params] = []
    for k in range(t):
        x, y = coords[k].expand(n, -1, -1), targets[:, k]

        def record(step: int, p: Params, k: int = k, x=x, y=y) -> None:
            if step in errors:
                errors[step][:, k] = point_losses(module, p, x, y).detach().cpu()

        finished.append(
            adapt(
                module,
                broadcast(theta0, n),
                x,
                y,
                max(cfg.eval_steps),
                cfg.inner_lr,
                fim=fim,
                on_step=record,
            )
        )
        if k == 0:
            first_mse = point_losses(module, finished[0], x, y).mean(-1).detach().cpu()
    out = {f"psnr_step{s}": mean_psnr(whole_signal(e)) for s, e in errors.items()}
    x0, y0 = coords[0].expand(n, -1, -1), targets[:, 0]
    final_first = point_losses(module, finished[0], x0, y0).mean(-1).detach().cpu()
    out["forgetting_q1_db"] = mean_psnr(first_mse) - mean_psnr(final_first)
    preds = torch.cat(
        [module_pred(module, p, coords[k].expand(n, -1, -1)) for k, p in enumerate(finished)], 1
    )
    out["ssim_final"] = mean_ssim(preds, images, index.reshape(-1))
    return out


def module_pred(module: Siren, params: Params, coords: torch.Tensor) -> torch.Tensor:
    return fields(module, params, coords).detach().cpu()


def evaluate_single(
    cfg, method, module, theta0, coords, targets, images, index
) -> dict[str, float]:
    n = targets.shape[0]
    out: dict[str, float] = {}
    all_x = coords.reshape(1, -1, 2).expand(n, -1, -1)
    all_y = targets.reshape(n, -1, 3)
    for s in cfg.eval_steps:
        if method == "OL":
            params, first_mse = (
                baselines.fit_offline(module, theta0, coords, targets, s, cfg.inner_lr),
                None,
            )
        else:
            kind = {"Naive": "naive", "MOL": "naive", "EWC": "ewc", "ER": "replay"}[method]
            params, first_mse = baselines.fit_single(
                module,
                theta0,
                coords,
                targets,
                s,
                cfg.inner_lr,
                kind,
                cfg.ewc_lambda,
                cfg.replay_points,
                cfg.seed,
            )
        out[f"psnr_step{s}"] = mean_psnr(
            point_losses(module, params, all_x, all_y).mean(-1).detach().cpu()
        )
        if s == max(cfg.eval_steps):
            out["ssim_final"] = mean_ssim(
                module_pred(module, params, all_x), images, index.reshape(-1)
            )
            if first_mse is not None:
                x0, y0 = coords[0].expand(n, -1, -1), targets[:, 0]
                final_first = point_losses(module, params, x0, y0).mean(-1).detach().cpu()
                out["forgetting_q1_db"] = mean_psnr(first_mse) - mean_psnr(final_first)
    return out


def save_init(path: Path, params: Params) -> None:
    """An initialisation as safetensors, written atomically."""
    atomic_write_bytes(path, save({k: v.contiguous().cpu() for k, v in params.items()}))


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Meta-train MCL-NF's shared module initialisation and MOL's single-MLP initialisation, then
    fit cfg.n_test held-out signals sub-task by sub-task with every method. Returns flat metrics
    'METHOD/metric'; writes config.json first, then the initialisations and metrics.json."""
    validate(cfg)
    torch.set_num_threads(cfg.threads)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    test_images = signals(cfg, "test", cfg.n_test)
    data.check_signals(test_images, cfg.grid)
    coords, index = data.partition(cfg.image_size, cfg.grid)
    coords = coords.to(cfg.device)
    targets = split_targets(test_images, index).to(cfg.device)

    mod_module, mod_init = meta_train(cfg, cfg.hidden, modular=True, desc="meta-train MCL-NF")
    single_module, mol_init = meta_train(
        cfg, cfg.single_hidden, modular=False, desc="meta-train MOL"
    )
    save_init(workdir / "mcl_nf_init.safetensors", mod_init)
    save_init(workdir / "mol_init.safetensors", mol_init)
    _, random_init = init_params(cfg.single_hidden, cfg.omega0, cfg.seed + 1, cfg.device)

    metrics: dict[str, float] = {}
    results = {
        "MCL-NF": evaluate_modular(
            cfg, mod_module, mod_init, coords, targets, test_images, index, None
        ),
        "MCL-NF+FIM": evaluate_modular(
            cfg,
            mod_module,
            mod_init,
            coords,
            targets,
            test_images,
            index,
            (cfg.fim_lambda, cfg.sigma),
        ),
        "MOL": evaluate_single(
            cfg, "MOL", single_module, mol_init, coords, targets, test_images, index
        ),
    }
    for method in ("OL", *CONTINUAL):
        results[method] = evaluate_single(
            cfg, method, single_module, random_init, coords, targets, test_images, index
        )
    for method in METHODS:
        metrics.update({f"{method}/{k}": float(v) for k, v in results[method].items()})
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
