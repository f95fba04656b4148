"""Test time: fit held-out signals sub-task by sub-task with every method, from the
initialisations they are given, and score the whole signal (PSNR, SSIM) and forgetting."""

from __future__ import annotations

import functools

import numpy as np
import torch
from skimage.metrics import structural_similarity

from . import baselines, data
from .config import METHODS as ALL_METHODS
from .config import Config
from .modular import Params, Siren, fields, fit_modules, point_losses

METHODS = ALL_METHODS
"""Mean: the floor (every sample predicted as its signal's mean). Modules-random: MCL-NF's modules
from their random initialisation (the method without its meta-learning). MCL-NF+FIM: the FIM loss
in the inner loop of meta-training and at test time."""
CONTINUAL = ("Naive", "EWC", "ER")


def ray_batch(cfg: Config) -> tuple[int, int] | None:
    """NeRF fits random batches of nerf_rays rays per SGD step (size, seed); others full batches."""
    return (cfg.nerf_rays, cfg.seed) if cfg.signal == "nerf" else None


def fim_setting(cfg: Config) -> tuple[float, float]:
    return (cfg.fim_lambda, cfg.fim_damping)


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


def evaluate_modular(
    cfg, module, theta0, coords, targets, values, index, fim, score=None
) -> dict[str, float]:
    """Fit module k on sub-task k only (k = 1..t in order, no replay), recording each module's
    per-point error at every eval step; whole-signal PSNR at step s combines all modules at s.
    PSNR is over the fitted samples, or over `score` = (coords, targets) when given (NeRF: the
    held-out views, rendered by the module of their block); forgetting is on sub-task 1's fitted
    samples; SSIM only when scoring what was fitted."""
    n, t = targets.shape[:2]
    last = max(cfg.eval_steps)
    score_x, score_y = score if score is not None else (coords, targets)
    errors = {s: torch.zeros(n, t, score_y.shape[2]) for s in cfg.eval_steps}
    x0, y0 = coords[0].expand(n, -1, -1), targets[:, 0]
    first: list[torch.Tensor] = []

    def record(k: int, step: int, p: Params) -> None:
        if step in errors:
            x, y = score_x[k].expand(n, -1, -1), score_y[:, k]
            errors[step][:, k] = point_losses(module, p, x, y).detach().cpu()
        if k == 0 and step == last:
            first.append(point_losses(module, p, x0, y0).mean(-1).detach().cpu())

    finished = fit_modules(
        module, theta0, coords, targets, last, cfg.inner_lr, fim, record, ray_batch(cfg)
    )
    out = {f"psnr_step{s}": mean_psnr(whole_signal(e)) for s, e in errors.items()}
    # sub-task 1's error right after it was learned (recorded above) vs after all sub-tasks
    final_first = point_losses(module, finished[0], x0, y0).mean(-1).detach().cpu()
    out["forgetting_q1_db"] = mean_psnr(first[0]) - mean_psnr(final_first)
    if score is None:
        preds = [
            module_pred(module, p, coords[k].expand(n, -1, -1)) for k, p in enumerate(finished)
        ]
        out.update(final_scores(torch.cat(preds, 1), values, index))
    return out


def module_pred(module: Siren, params: Params, coords: torch.Tensor) -> torch.Tensor:
    return fields(module, params, coords).detach().cpu()


def evaluate_single(
    cfg, method, module, theta0, coords, targets, values, index, score=None
) -> dict[str, float]:
    """One MLP per signal: OL on all data at once, or naive / EWC / ER / MOL sequentially.
    A sequential run with s steps per sub-task is its own trajectory (one per eval step); OL's
    t * s steps for every s are prefixes of one trajectory, recorded on the way. PSNR, forgetting
    and SSIM as in `evaluate_modular`."""
    n, t = targets.shape[:2]
    last = max(cfg.eval_steps)
    all_x = coords.reshape(1, -1, coords.shape[-1]).expand(n, -1, -1)
    score_x, score_y = score if score is not None else (coords, targets)
    score_x = score_x.reshape(1, -1, score_x.shape[-1]).expand(n, -1, -1)
    score_y = score_y.reshape(n, -1, score_y.shape[-1])
    fitted: dict[int, Params] = {}
    first_mse = None
    if method == "OL":

        def record(step: int, p: Params) -> None:
            if step % t == 0 and step // t in cfg.eval_steps:
                fitted[step // t] = {k: v.detach() for k, v in p.items()}

        baselines.fit_offline(
            module, theta0, coords, targets, last, cfg.inner_lr, record, ray_batch(cfg)
        )
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
                ray_batch(cfg),
            )
            if s == last:
                first_mse = first.cpu()
    out = {
        f"psnr_step{s}": mean_psnr(
            point_losses(module, p, score_x, score_y).mean(-1).detach().cpu()
        )
        for s, p in sorted(fitted.items())
    }
    if score is None:
        out.update(final_scores(module_pred(module, fitted[last], all_x), values, index))
    if first_mse is not None:
        x0, y0 = coords[0].expand(n, -1, -1), targets[:, 0]
        final_first = point_losses(module, fitted[last], x0, y0).mean(-1).detach().cpu()
        out["forgetting_q1_db"] = mean_psnr(first_mse) - mean_psnr(final_first)
    return out


def chunk_size(cfg: Config, index: torch.Tensor) -> int:
    """Held-out signals fitted at once: all, or as many as keep their points under test_points
    (a NeRF signal's points are its rays' samples)."""
    if not cfg.test_points:
        return cfg.n_test
    per_signal = index.numel() * (cfg.nerf_samples if cfg.signal == "nerf" else 1)
    return max(1, cfg.test_points // per_signal)


def mean_floor(cfg: Config, targets: torch.Tensor, score) -> dict[str, float]:
    """The floor: every sample predicted as its signal's mean over the fitted samples."""
    score_y = (score[1] if score is not None else targets).flatten(1, 2)
    mean = targets.flatten(1, 2).mean(1, keepdim=True)
    value = mean_psnr(((score_y - mean) ** 2).mean((1, 2)).cpu())
    return {f"psnr_step{s}": value for s in cfg.eval_steps}


def evaluate_methods(cfg: Config, inits: tuple, args: tuple, score) -> dict[str, float]:
    """Every method on one batch of held-out signals; flat metrics 'METHOD/metric'."""
    mod_module, mod_init, fim_init, modules_random, single_module, mol_init, random_init = inits
    modular = functools.partial(evaluate_modular, cfg, mod_module)

    def single(method: str, init) -> dict[str, float]:
        return evaluate_single(cfg, method, single_module, init, *args, score)

    runners = {
        "Mean": lambda: mean_floor(cfg, args[1], score),
        "MCL-NF": lambda: modular(mod_init, *args, None, score),
        "MCL-NF+FIM": lambda: modular(fim_init, *args, fim_setting(cfg), score),
        "Modules-random": lambda: modular(modules_random, *args, None, score),
        "MOL": lambda: single("MOL", mol_init),
        **{m: functools.partial(single, m, random_init) for m in ("OL", *CONTINUAL)},
    }
    chosen = [m for m in METHODS if m in (cfg.methods or METHODS)]
    results = {m: runners[m]() for m in chosen}
    return {f"{m}/{k}": float(v) for m in chosen for k, v in results[m].items()}


def combine(parts: list[tuple[int, dict[str, float]]]) -> dict[str, float]:
    """Metrics of all held-out signals from those of chunks of n signals: every metric is a mean
    over signals (or a difference of such means), so the chunks' means weighted by n."""
    if len(parts) == 1:
        return parts[0][1]
    total = sum(n for n, _ in parts)
    return {k: sum(n * m[k] for n, m in parts) / total for k in parts[0][1]}
