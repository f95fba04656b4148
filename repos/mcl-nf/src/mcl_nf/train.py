"""train_and_evaluate(cfg, workdir) -> metrics: meta-train, then fit held-out signals sub-task by
sub-task with every method and score the whole signal (PSNR, SSIM) and forgetting."""

from __future__ import annotations

import dataclasses
import functools
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
    fields,
    fit_modules,
    init_params,
    maml_outer_loss,
    point_losses,
)
from .results import atomic_write_bytes, atomic_write_json

METHODS = ("OL", "Naive", "EWC", "ER", "MOL", "MCL-NF", "MCL-NF+FIM")
CONTINUAL = ("Naive", "EWC", "ER")


@functools.cache
def folder_pool(folder: str, size: int) -> torch.Tensor:
    """The image folder, decoded once per process (meta-training draws from it every step)."""
    return data.load_image_folder(folder, size)


def signals(cfg: Config, split: str, n: int, offset: int = 0) -> torch.Tensor:
    """Meta-training draws fresh procedural signals each step; test signals use disjoint seeds.
    Images (n, H, H, 3), audio clips (n, L, 1) or videos (n, F, H, H, 3). With --image-folder, the last n_test images are
    the test split and the rest meta-train."""
    if cfg.signal == "image" and cfg.image_folder:
        pool = folder_pool(cfg.image_folder, cfg.image_size)
        if len(pool) <= cfg.n_test:
            raise ValueError(
                f"{cfg.image_folder} holds {len(pool)} images; need more than n_test={cfg.n_test}"
            )
        if split == "test":
            return pool[-cfg.n_test :]
        train = pool[: -cfg.n_test]
        return train[torch.arange(offset * n, offset * n + n) % len(train)]
    base = 1_000_003 * cfg.seed + (0 if split == "train" else 7_919_000)
    if cfg.signal == "audio":
        return data.procedural_chirps(n, cfg.audio_length, base + offset)
    if cfg.signal == "video":
        return data.procedural_videos(n, cfg.video_frames, cfg.image_size, base + offset)
    return data.procedural_images(n, cfg.image_size, base + offset)


def check(cfg: Config, values: torch.Tensor) -> None:
    """Clear errors for signals that do not split into the configured sub-tasks or hold NaNs."""
    if cfg.signal == "audio":
        data.check_audio(values, cfg.time_segments)
    elif cfg.signal == "video":
        data.check_video(values, cfg.time_segments)
    else:
        data.check_signals(values, cfg.grid)


def layout(cfg: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """Sub-task coordinates (t, m, in_dim) and signal indices (t, m): blocks or time segments."""
    if cfg.signal == "audio":
        return data.segments_1d(cfg.audio_length, cfg.time_segments)
    if cfg.signal == "video":
        return data.segments_video(cfg.video_frames, cfg.image_size, cfg.time_segments)
    return data.partition(cfg.image_size, cfg.grid)


def new_field(cfg: Config, hidden: int, seed: int) -> tuple[Siren, Params]:
    """A SIREN for this signal family (2 -> 3 image, 1 -> 1 audio, 3 -> 3 video) and its init."""
    dims = {"image": (2, 3), "audio": (1, 1), "video": (3, 3)}[cfg.signal]
    return init_params(hidden, cfg.omega0, seed, cfg.device, *dims)


def split_targets(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(n, *shape, C) -> (n, t, m, C): each sub-task's samples, in the partition's order."""
    return values.reshape(values.shape[0], -1, values.shape[-1])[:, index]


def meta_train(cfg: Config, hidden: int, modular: bool, desc: str) -> tuple[Siren, Params]:
    """MAML over signals. Modular: every sub-task block of every signal is one inner-loop task
    sharing theta_0 (all B * t modules vmapped at once). Single: the whole signal is one task."""
    module, theta0 = new_field(cfg, hidden, cfg.seed)
    theta0 = {k: v.requires_grad_() for k, v in theta0.items()}
    opt = torch.optim.Adam(theta0.values(), lr=cfg.meta_lr)
    coords, index = layout(cfg)
    if not modular:
        coords, index = coords.reshape(1, -1, coords.shape[-1]), index.reshape(1, -1)
    coords = coords.to(cfg.device)
    bar = tqdm(range(cfg.meta_steps), desc=desc, disable=cfg.quiet or not sys.stderr.isatty())
    for step in bar:
        batch = split_targets(signals(cfg, "train", cfg.meta_batch, step), index).to(cfg.device)
        t = batch.shape[1]
        x = coords.repeat(cfg.meta_batch, 1, 1)
        y = batch.reshape(cfg.meta_batch * t, -1, batch.shape[-1])
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


def final_scores(pred: torch.Tensor, values: torch.Tensor, index: torch.Tensor) -> dict[str, float]:
    """SSIM of the reassembled images or video frames (scikit-image, data range 1); none for
    audio. pred (n, N, C) in the partition's order."""
    if values.ndim < 4:
        return {}
    n, channels = values.shape[0], values.shape[-1]
    canvas = torch.zeros(n, values[0].numel() // channels, channels)
    canvas[:, index.reshape(-1)] = pred.detach().cpu().clamp(0, 1)
    frames = canvas.reshape(-1, *values.shape[-3:]).numpy()
    refs = values.reshape(-1, *values.shape[-3:]).numpy()
    ssim = [
        structural_similarity(frame, ref, channel_axis=-1, data_range=1.0)
        for frame, ref in zip(frames, refs)
    ]
    return {"ssim_final": float(np.mean(ssim))}


def evaluate_modular(cfg, module, theta0, coords, targets, values, index, fim) -> dict[str, float]:
    """Fit module k on sub-task k only (k = 1..t in order, no replay), recording each module's
    per-point error at every eval step; whole-signal PSNR at step s combines all modules at s."""
    n, t = targets.shape[:2]
    last = max(cfg.eval_steps)
    errors = {s: torch.zeros(n, t, targets.shape[2]) for s in cfg.eval_steps}

    def record(k: int, step: int, p: Params) -> None:
        if step in errors:
            x, y = coords[k].expand(n, -1, -1), targets[:, k]
            errors[step][:, k] = point_losses(module, p, x, y).detach().cpu()

    finished = fit_modules(module, theta0, coords, targets, last, cfg.inner_lr, fim, record)
    out = {f"psnr_step{s}": mean_psnr(whole_signal(e)) for s, e in errors.items()}
    # sub-task 1's error right after it was learned (recorded above) vs after all sub-tasks
    x0, y0 = coords[0].expand(n, -1, -1), targets[:, 0]
    final_first = point_losses(module, finished[0], x0, y0).mean(-1).detach().cpu()
    out["forgetting_q1_db"] = mean_psnr(errors[last][:, 0].mean(-1)) - mean_psnr(final_first)
    preds = torch.cat(
        [module_pred(module, p, coords[k].expand(n, -1, -1)) for k, p in enumerate(finished)], 1
    )
    out.update(final_scores(preds, values, index))
    return out


def module_pred(module: Siren, params: Params, coords: torch.Tensor) -> torch.Tensor:
    return fields(module, params, coords).detach().cpu()


def evaluate_single(
    cfg, method, module, theta0, coords, targets, values, index
) -> dict[str, float]:
    """One MLP per signal: OL on all data at once, or naive / EWC / ER / MOL sequentially.
    A sequential run with s steps per sub-task is its own trajectory (one per eval step); OL's
    t * s steps for every s are prefixes of one trajectory, recorded on the way."""
    n, t = targets.shape[:2]
    last = max(cfg.eval_steps)
    all_x = coords.reshape(1, -1, coords.shape[-1]).expand(n, -1, -1)
    all_y = targets.reshape(n, -1, targets.shape[-1])
    fitted: dict[int, Params] = {}
    first_mse = None
    if method == "OL":

        def record(step: int, p: Params) -> None:
            if step % t == 0 and step // t in cfg.eval_steps:
                fitted[step // t] = {k: v.detach() for k, v in p.items()}

        baselines.fit_offline(module, theta0, coords, targets, last, cfg.inner_lr, on_step=record)
    else:
        kind = {"Naive": "naive", "MOL": "naive", "EWC": "ewc", "ER": "replay"}[method]
        for s in sorted(cfg.eval_steps):
            fitted[s], first = baselines.fit_single(
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
            if s == last:
                first_mse = first.cpu()
    out = {
        f"psnr_step{s}": mean_psnr(point_losses(module, p, all_x, all_y).mean(-1).detach().cpu())
        for s, p in sorted(fitted.items())
    }
    out.update(final_scores(module_pred(module, fitted[last], all_x), values, index))
    if first_mse is not None:
        x0, y0 = coords[0].expand(n, -1, -1), targets[:, 0]
        final_first = point_losses(module, fitted[last], x0, y0).mean(-1).detach().cpu()
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
    test_values = signals(cfg, "test", cfg.n_test)
    check(cfg, test_values)
    coords, index = layout(cfg)
    coords = coords.to(cfg.device)
    targets = split_targets(test_values, index).to(cfg.device)

    mod_module, mod_init = meta_train(cfg, cfg.hidden, modular=True, desc="meta-train MCL-NF")
    single_module, mol_init = meta_train(
        cfg, cfg.single_hidden, modular=False, desc="meta-train MOL"
    )
    save_init(workdir / "mcl_nf_init.safetensors", mod_init)
    save_init(workdir / "mol_init.safetensors", mol_init)
    _, random_init = new_field(cfg, cfg.single_hidden, cfg.seed + 1)

    metrics: dict[str, float] = {}
    results = {
        "MCL-NF": evaluate_modular(
            cfg, mod_module, mod_init, coords, targets, test_values, index, None
        ),
        "MCL-NF+FIM": evaluate_modular(
            cfg,
            mod_module,
            mod_init,
            coords,
            targets,
            test_values,
            index,
            (cfg.fim_lambda, cfg.sigma),
        ),
        "MOL": evaluate_single(
            cfg, "MOL", single_module, mol_init, coords, targets, test_values, index
        ),
    }
    for method in ("OL", *CONTINUAL):
        results[method] = evaluate_single(
            cfg, method, single_module, random_init, coords, targets, test_values, index
        )
    # what meta-learning buys at step 1: the same modules started from their random init instead
    _, modules_random = new_field(cfg, cfg.hidden, cfg.seed)
    step1 = dataclasses.replace(cfg, eval_steps=(1,))
    results["MCL-NF"]["psnr_step1_random_init"] = evaluate_modular(
        step1, mod_module, modules_random, coords, targets, test_values, index, None
    )["psnr_step1"]
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
