"""train_and_evaluate(cfg, workdir) -> metrics: meta-train, then fit held-out signals sub-task by
sub-task with every method (testtime.py) and score the whole signal (PSNR, SSIM) and forgetting.
evaluate(cfg, workdir) reloads the meta-learned initialisations a run saved and fits again."""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path

import torch
from safetensors.torch import save
from tqdm import tqdm

from . import data
from .config import Config, validate
from .modular import Params, Siren, init_params, maml_outer_loss
from .nerf import NerfField
from .results import atomic_write_bytes, atomic_write_json, load_safetensors, read_json
from .testtime import chunk_size, combine, evaluate_methods, fim_setting

INIT_FILES = {
    "MCL-NF": "mcl_nf_init.safetensors",
    "MCL-NF+FIM": "mcl_nf_fim_init.safetensors",
    "MOL": "mol_init.safetensors",
}
"""The meta-learned initialisations a `train` run saves, by the method that starts from them."""


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
    """Signals from --image-folder: test_images (or n_test) images, chosen at random per seed
    (`data.held_out_split`), are held out; the rest meta-train. Whole
    images (the first n held-out ones; training images cycled through), or with --crop-side
    random crops (fresh per meta-step, fixed per seed for the test split)."""
    pool = folder_pool(cfg.image_folder, cfg.crop_side or cfg.image_size)
    held = cfg.test_images or cfg.n_test
    if len(pool) <= held:
        raise ValueError(
            f"{cfg.image_folder} holds {len(pool)} images; need more than the {held} held out "
            "(--test-images, or --n-test)"
        )
    test_idx, train_idx = data.held_out_split(len(pool), held, cfg.seed)
    images = pool[test_idx] if split == "test" else pool[train_idx]
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
    held = held_out(cfg)  # before meta-training: a bad signal fails at once
    trainers = {
        "MCL-NF": lambda: meta_train(cfg, cfg.hidden, modular=True, desc="meta-train MCL-NF"),
        "MCL-NF+FIM": lambda: meta_train(
            cfg, cfg.hidden, modular=True, desc="meta-train MCL-NF+FIM", fim=fim_setting(cfg)
        ),
        "MOL": lambda: meta_train(cfg, cfg.single_hidden, modular=False, desc="meta-train MOL"),
    }
    learned = {m: trainers[m]()[1] for m in meta_learned(cfg)}
    for method, params in learned.items():
        save_init(workdir / INIT_FILES[method], params)
    metrics = fit_held_out(cfg, learned, held)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def meta_learned(cfg: Config) -> list[str]:
    """The meta-learned methods (INIT_FILES' keys) among the run's --methods (all if empty)."""
    return [m for m in INIT_FILES if m in (cfg.methods or INIT_FILES)]


def held_out(cfg: Config) -> tuple:
    """The held-out signals as sub-tasks: (values, coords, index, targets, score)."""
    test_values = signals(cfg, "test", cfg.n_test)
    check(cfg, test_values)
    coords, index = layout(cfg)
    coords = coords.to(cfg.device)
    targets = split_targets(test_values, index).to(cfg.device)
    coords, targets, score = split_views(cfg, coords, targets)
    return test_values, coords, index, targets, score


def fit_held_out(cfg: Config, learned: dict[str, Params], held: tuple) -> dict[str, float]:
    """Every method on the held-out signals, the meta-learned ones from `learned` (INIT_FILES'
    keys; only those of the run's --methods are needed), in chunks of chunk_size signals."""
    test_values, coords, index, targets, score = held
    mod_module, modules_random = new_field(cfg, cfg.hidden, cfg.seed)
    single_module, _ = new_field(cfg, cfg.single_hidden, cfg.seed)
    _, random_init = new_field(cfg, cfg.single_hidden, cfg.seed + 1)
    inits = (
        mod_module,
        learned.get("MCL-NF"),
        learned.get("MCL-NF+FIM"),
        modules_random,
        single_module,
        learned.get("MOL"),
        random_init,
    )
    size = chunk_size(cfg, index)
    parts = []
    for start in range(0, cfg.n_test, size):
        part = slice(start, start + size)
        args = (coords, targets[part], test_values[part], index)
        part_score = None if score is None else (score[0], score[1][part])
        parts.append((len(args[1]), evaluate_methods(cfg, inits, args, part_score)))
    return combine(parts)


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Reload the initialisations a previous `train` saved in workdir and fit the run's held-out
    signals again with every method (the run's config.json fixes seed, signal and sizes; this
    command's own flags only choose the device and threads)."""
    workdir = Path(workdir)
    config_path = workdir / "config.json"
    saved = read_json(config_path, "run config")
    if not isinstance(saved, dict) or "signal" not in saved:
        raise ValueError(f"{config_path}: not a config written by train (no signal field)")
    fields = {f.name for f in dataclasses.fields(Config)} - {"device", "threads", "quiet", "out"}
    try:
        run_cfg = dataclasses.replace(
            cfg,
            **{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k in fields},
        )
        validate(run_cfg)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{config_path}: not a usable run config ({exc})") from None
    torch.set_num_threads(run_cfg.threads)
    learned = {}
    for method in meta_learned(run_cfg):
        name = INIT_FILES[method]
        hidden = run_cfg.single_hidden if method == "MOL" else run_cfg.hidden
        _, fresh = new_field(run_cfg, hidden, run_cfg.seed)
        loaded = load_safetensors(workdir / name)
        if {k: tuple(v.shape) for k, v in loaded.items()} != {
            k: tuple(v.shape) for k, v in fresh.items()
        }:
            raise ValueError(f"{workdir / name}: parameters do not fit the run's {method} network")
        learned[method] = {k: v.to(fresh[k]) for k, v in loaded.items()}
    return fit_held_out(run_cfg, learned, held_out(run_cfg))
