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
from .nerf import NerfField
from .results import atomic_write_bytes, atomic_write_json

METHODS = ("Mean", "OL", "Naive", "EWC", "ER", "MOL", "Modules-random", "MCL-NF", "MCL-NF+FIM")
"""Mean: the floor (every sample predicted as its signal's mean). Modules-random: MCL-NF's modules
from their random initialisation (the method without its meta-learning). MCL-NF+FIM: the FIM loss
in the inner loop of meta-training and at test time."""
CONTINUAL = ("Naive", "EWC", "ER")


@functools.cache
def folder_pool(folder: str, size: int) -> torch.Tensor:
    """The image folder, decoded once per process (meta-training draws from it every step)."""
    return data.load_image_folder(folder, size)


def signals(cfg: Config, split: str, n: int, offset: int = 0) -> torch.Tensor:
    """Meta-training draws fresh procedural signals each step; test signals use disjoint seeds.
    Images (n, H, H, 3), audio clips (n, L, 1), videos (n, F, H, H, 3) or NeRF cities
    (n, t, views, H, H, 3), rendered on cfg.device. --image-folder: see `folder_signals`."""
    if cfg.signal == "image" and cfg.image_folder:
        return folder_signals(cfg, split, n, offset)
    base = signal_seed(cfg, split, offset)
    if cfg.signal == "audio":
        return data.procedural_chirps(n, cfg.audio_length, base)
    if cfg.signal == "nerf":
        views = (cfg.nerf_resolution, cfg.nerf_views, cfg.nerf_test_views, cfg.nerf_samples)
        return data.procedural_cities(n, cfg.grid, *views, base, cfg.device)
    if cfg.signal == "video":
        return data.procedural_videos(n, cfg.video_frames, cfg.image_size, base)
    return data.procedural_images(n, cfg.image_size, base)


def folder_signals(cfg: Config, split: str, n: int, offset: int) -> torch.Tensor:
    """Signals from --image-folder: its last test_images (or n_test) images are held out. Whole
    images (the first n held-out ones; training images cycled through), or with --crop-side
    random crops (fresh per meta-step, fixed per seed for the test split)."""
    pool = folder_pool(cfg.image_folder, cfg.crop_side or cfg.image_size)
    held = cfg.test_images or cfg.n_test
    if len(pool) <= held:
        raise ValueError(
            f"{cfg.image_folder} holds {len(pool)} images; need more than the {held} held out "
            "(--test-images, or --n-test)"
        )
    images = pool[-held:] if split == "test" else pool[:-held]
    if cfg.crop_side:
        return data.random_crops(images, n, cfg.image_size, signal_seed(cfg, split, offset))
    if split == "test":
        if n > held:
            raise ValueError(f"n_test={n} whole test images need --test-images >= {n}")
        return images[:n]
    return images[torch.arange(offset * n, offset * n + n) % len(images)]


def signal_seed(cfg: Config, split: str, offset: int) -> int:
    """Seed of the procedural signals of a split (disjoint for train and test) and step."""
    return 1_000_003 * cfg.seed + (0 if split == "train" else 7_919_000) + offset


def check(cfg: Config, values: torch.Tensor) -> None:
    """Clear errors for signals that do not split into the configured sub-tasks or hold NaNs."""
    if cfg.signal == "audio":
        data.check_audio(values, cfg.time_segments)
    elif cfg.signal == "video":
        data.check_video(values, cfg.time_segments)
    elif cfg.signal == "nerf":
        data.check_nerf(values, cfg.grid)
    else:
        data.check_signals(values, cfg.grid)


def layout(cfg: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """Sub-task coordinates (t, m, in_dim) and signal indices (t, m): blocks, time segments, or
    for NeRF the rays (t, m, 8) of each block's cameras, training views first."""
    if cfg.signal == "nerf":
        return data.city_rays(cfg.grid, cfg.nerf_resolution, cfg.nerf_views, cfg.nerf_test_views)
    if cfg.signal == "audio":
        return data.segments_1d(cfg.audio_length, cfg.time_segments)
    if cfg.signal == "video":
        return data.segments_video(cfg.video_frames, cfg.image_size, cfg.time_segments)
    return data.partition(cfg.image_size, cfg.grid)


def new_field(cfg: Config, hidden: int, seed: int) -> tuple[Siren, Params]:
    """A SIREN for this signal family (2 -> 3 image, 1 -> 1 audio, 3 -> 3 video; a NeRF field
    3 -> 4 rendered along rays) and its init."""
    if cfg.signal == "nerf":
        make = functools.partial(NerfField, samples=cfg.nerf_samples)
        return init_params(hidden, cfg.omega0, seed, cfg.device, 3, 4, make)
    dims = {"image": (2, 3), "audio": (1, 1), "video": (3, 3)}[cfg.signal]
    return init_params(hidden, cfg.omega0, seed, cfg.device, *dims)


def ray_batch(cfg: Config) -> tuple[int, int] | None:
    """NeRF fits random batches of nerf_rays rays per SGD step (size, seed); others full batches."""
    return (cfg.nerf_rays, cfg.seed) if cfg.signal == "nerf" else None


def fitted_count(cfg: Config, m: int) -> int:
    """Samples per sub-task that are fitted: NeRF, the rays of the first nerf_views views of each
    block (the rest are held out for scoring); all m otherwise."""
    return cfg.nerf_views * cfg.nerf_resolution**2 if cfg.signal == "nerf" else m


def split_views(
    cfg: Config, coords: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]:
    """(fitted coords, fitted targets, scored (coords, targets)): NeRF is scored on its held-out
    views; other families on what they fit (None)."""
    m = fitted_count(cfg, coords.shape[1])
    if m == coords.shape[1]:
        return coords, targets, None
    return coords[:, :m], targets[:, :, :m], (coords[:, m:], targets[:, :, m:])


def split_targets(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(n, *shape, C) -> (n, t, m, C): each sub-task's samples, in the partition's order."""
    return values.reshape(values.shape[0], -1, values.shape[-1])[:, index]


def meta_train(
    cfg: Config, hidden: int, modular: bool, desc: str, fim: tuple[float, float] | None = None
) -> tuple[Siren, Params]:
    """MAML over signals. Modular: every sub-task block of every signal is one inner-loop task
    sharing theta_0 (all B * t modules vmapped at once). Single: the whole signal is one task.
    `fim=(lam, damping)`: the inner loop fits with the FIM loss."""
    module, theta0 = new_field(cfg, hidden, cfg.seed)
    theta0 = {k: v.requires_grad_() for k, v in theta0.items()}
    opt = torch.optim.Adam(theta0.values(), lr=cfg.meta_lr)
    coords, index = layout(cfg)
    m = fitted_count(cfg, coords.shape[1])
    coords, index = coords[:, :m], index[:, :m]
    if not modular:
        coords, index = coords.reshape(1, -1, coords.shape[-1]), index.reshape(1, -1)
    coords = coords.to(cfg.device)
    bar = tqdm(range(cfg.meta_steps), desc=desc, disable=cfg.quiet or not sys.stderr.isatty())
    for step in bar:
        x, y = meta_batch(cfg, step, coords, index)
        loss = maml_outer_loss(
            module, theta0, x, y, cfg.inner_steps, cfg.inner_lr, cfg.first_order, fim
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(outer_mse=f"{loss.item():.4f}")
    return module, {k: v.detach() for k, v in theta0.items()}


def meta_batch(
    cfg: Config, step: int, coords: torch.Tensor, index: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One meta-step's inner-loop tasks, coords (B * t', m, d) and targets (B * t', m, C), for
    coords (t', m, d) of t' modules (or one whole-signal task). NeRF: nerf_rays random rays per
    sub-task (the same for every task of the step), rendered from fresh scenes."""
    n = cfg.meta_batch
    if cfg.signal != "nerf":
        batch = split_targets(signals(cfg, "train", n, step), index).to(cfg.device)
        return coords.repeat(n, 1, 1), batch.reshape(n * batch.shape[1], -1, batch.shape[-1])
    per_task = min(cfg.nerf_rays * cfg.grid**2 // coords.shape[0], coords.shape[1])
    gen = torch.Generator().manual_seed(signal_seed(cfg, "train", step))
    coords = coords[:, torch.randperm(coords.shape[1], generator=gen)[:per_task].to(coords.device)]
    scenes = data.procedural_scenes(n, cfg.grid, signal_seed(cfg, "train", step))
    pixels = data.render_scenes(scenes, coords.reshape(-1, 8), cfg.nerf_samples, cfg.grid)
    return coords.repeat(n, 1, 1), pixels.reshape(n * coords.shape[0], per_task, 3)


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
    coords, targets, score = split_views(cfg, coords, targets)

    mod_module, mod_init = meta_train(cfg, cfg.hidden, modular=True, desc="meta-train MCL-NF")
    _, fim_init = meta_train(
        cfg, cfg.hidden, modular=True, desc="meta-train MCL-NF+FIM", fim=fim_setting(cfg)
    )
    single_module, mol_init = meta_train(
        cfg, cfg.single_hidden, modular=False, desc="meta-train MOL"
    )
    save_init(workdir / "mcl_nf_init.safetensors", mod_init)
    save_init(workdir / "mcl_nf_fim_init.safetensors", fim_init)
    save_init(workdir / "mol_init.safetensors", mol_init)
    _, random_init = new_field(cfg, cfg.single_hidden, cfg.seed + 1)
    _, modules_random = new_field(cfg, cfg.hidden, cfg.seed)
    inits = (mod_module, mod_init, fim_init, modules_random, single_module, mol_init, random_init)

    size = chunk_size(cfg, index)
    parts = []
    for start in range(0, cfg.n_test, size):
        part = slice(start, start + size)
        args = (coords, targets[part], test_values[part], index)
        part_score = None if score is None else (score[0], score[1][part])
        parts.append((len(args[1]), evaluate_methods(cfg, inits, args, part_score)))
    metrics = combine(parts)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def chunk_size(cfg: Config, index: torch.Tensor) -> int:
    """Held-out signals fitted at once: all, or as many as keep their points under test_points
    (a NeRF signal's points are its rays' samples)."""
    if not cfg.test_points:
        return cfg.n_test
    per_signal = index.numel() * (cfg.nerf_samples if cfg.signal == "nerf" else 1)
    return max(1, cfg.test_points // per_signal)


def fim_setting(cfg: Config) -> tuple[float, float]:
    return (cfg.fim_lambda, cfg.fim_damping)


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
    results = {
        "Mean": mean_floor(cfg, args[1], score),
        "MCL-NF": modular(mod_init, *args, None, score),
        "MCL-NF+FIM": modular(fim_init, *args, fim_setting(cfg), score),
        "Modules-random": modular(modules_random, *args, None, score),
        "MOL": evaluate_single(cfg, "MOL", single_module, mol_init, *args, score),
    }
    for method in ("OL", *CONTINUAL):
        results[method] = evaluate_single(cfg, method, single_module, random_init, *args, score)
    return {f"{m}/{k}": float(v) for m in METHODS for k, v in results[m].items()}


def combine(parts: list[tuple[int, dict[str, float]]]) -> dict[str, float]:
    """Metrics of all held-out signals from those of chunks of n signals: every metric is a mean
    over signals (or a difference of such means), so the chunks' means weighted by n."""
    if len(parts) == 1:
        return parts[0][1]
    total = sum(n for n, _ in parts)
    return {k: sum(n * m[k] for n, m in parts) / total for k in parts[0][1]}


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
