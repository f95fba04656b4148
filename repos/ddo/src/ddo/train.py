"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through;
evaluate(cfg, workdir) reloads the models a run saved and scores fresh samples from them.

One seed: the soft-tilt problem (DA, then every sampler of the same tilted distribution, scored
against the grid optimum q_hat), the hard-tilt problem (DDO's sampler against short-run
Langevin), exact DA on the grid, and with cfg.images the image experiment (ddo.images).
The experiments live in ddo.experiments; metric keys are "<method>/<metric>".
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from torch import nn

from .baselines import ScoreNet
from .config import Config, validate
from .dual_averaging import Potential
from .experiments import grid_da_rows, optimum, problem, rescore, run_hard, run_soft
from .results import atomic_write_bytes, atomic_write_json, load_safetensors, read_json
from .runtime import RunConfig, resolve_device

__all__ = ["METHODS", "evaluate", "optimum", "problem", "train_and_evaluate"]

METHODS = (
    "DDO (exact score)", "DDO (learned score)", "Diffusion-DPO", "Learned reference", "ULA",
    "MALA", "Importance resampling", "Reference",
)  # fmt: skip
MODELS = "models.safetensors"
"""The 2-D models of a run, keys "<model>.<parameter>": soft_potential and hard_potential (DA's
last potentials f_K), score_net (the learned reference score), diffusion_dpo (its fine-tune)."""
EVAL_SEED = 50_000
"""eval draws its samples with seed EVAL_SEED + the run's seed (fresh draws, not the run's)."""


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Run DDO and every baseline for cfg.seed; writes workdir/config.json first, then the
    models, the samples and metrics.json."""
    validate(cfg)
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    g = torch.Generator().manual_seed(cfg.seed)
    metrics, samples, models = run_soft(cfg, g)
    hard_metrics, hard_samples, hard_models = run_hard(cfg, g)
    metrics.update(hard_metrics)
    metrics.update(grid_da_rows(cfg))
    save_models(workdir / MODELS, {**models, **hard_models})
    save_samples(workdir / "samples.npz", samples)
    save_samples(workdir / "samples_hard.npz", hard_samples)
    if cfg.images:
        from .images import run_images  # needs diffusers (the images extra)

        metrics.update(run_images(cfg, workdir, g))
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def save_samples(path: Path, samples: dict[str, torch.Tensor]) -> None:
    """Every method's samples as one .npz (read back by the benchmark's figures)."""
    buf = io.BytesIO()
    np.savez(buf, **{name: x.numpy() for name, x in samples.items()})
    atomic_write_bytes(path, buf.getvalue())


def save_models(path: Path, models: dict[str, nn.Module]) -> None:
    """The state dicts of `models` in one safetensors file (atomic)."""
    tensors = {
        f"{name}.{k}": v.detach().cpu().contiguous()
        for name, model in models.items()
        for k, v in model.state_dict().items()
    }
    tmp = path.with_name(f".{path.name}.tmp")
    save_file(tensors, str(tmp))
    tmp.replace(path)


def load_models(cfg: Config, path: Path) -> dict[str, nn.Module]:
    """The models save_models wrote for a run with config cfg; ValueError naming the file when
    one is missing or does not fit the config."""
    tensors = load_safetensors(path)
    models = {
        "soft_potential": Potential(2, cfg.hidden),
        "hard_potential": Potential(2, cfg.hidden),
        "score_net": ScoreNet(2, cfg.dsm_hidden),
        "diffusion_dpo": ScoreNet(2, cfg.dsm_hidden),
    }
    for name, model in models.items():
        state = {k[len(name) + 1 :]: v for k, v in tensors.items() if k.startswith(name + ".")}
        try:
            model.load_state_dict(state)
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[0][:120]
            raise ValueError(f"{path}: no complete {name} model ({first})") from None
        model.eval().requires_grad_(False)
    return models


def run_config(cfg: Config, workdir: Path) -> Config:
    """The Config a run in workdir was trained with (its config.json); the device, threads,
    quiet flag and paths come from `cfg` (where this evaluation runs)."""
    path = workdir / "config.json"
    saved = read_json(path, "run config")
    if not isinstance(saved, dict):
        raise ValueError(f"{path}: expected a JSON object")  # noqa: TRY004
    plumbing = {f.name for f in dataclasses.fields(RunConfig)} - {"name", "seed"}
    fields = {f.name for f in dataclasses.fields(Config)} - plumbing - {"threads"}
    try:
        return validate(
            dataclasses.replace(
                cfg,
                **{
                    k: tuple(v) if isinstance(v, list) else v
                    for k, v in saved.items()
                    if k in fields
                },
            )
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a config of this version ({exc})") from None


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Reload the 2-D models a previous `train` saved in workdir and score fresh samples from
    them with the run's settings (experiments.rescore); the image experiment is not rerun."""
    workdir = Path(workdir)
    run_cfg = run_config(cfg, workdir)
    models = load_models(run_cfg, workdir / MODELS)
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(EVAL_SEED + run_cfg.seed)
    return rescore(run_cfg, models, torch.Generator().manual_seed(EVAL_SEED + run_cfg.seed))
