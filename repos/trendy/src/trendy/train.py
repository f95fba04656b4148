"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

One run = simulate (or load, or reuse) the data for cfg.seed, corrupt it with cfg.noise,
measure, reduce with PCA, and fit TRENDy's neural ODE and the SINDyCP baseline on the same
reduced states, each tuned on a validation split carved from the training trajectories with an
equal-size grid. Both are scored on the held-out test trajectories beside floors (persistence,
the training-mean trajectory), an untrained network (negative control) and, under noise, the
clean measurement (oracle). For the Brusselator the bifurcation lines named in cfg.bands are
located (`sweeps.py`) and regimes are classified from predicted final states.

`train_and_evaluate` saves the fitted TRENDy model with its frozen PCA reducer
(model.safetensors); `evaluate` reloads them, re-derives the test trajectories from the run's
config.json and scores the reloaded model on them again.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from . import baselines, bifurcation, data, node, sweeps
from .config import Config, validate
from .results import atomic_write_bytes, atomic_write_json, load_safetensors, read_json
from .sweeps import measure


@dataclasses.dataclass
class Run:
    """What one run produced: scalar metrics, per-instance errors for paired intervals (per test
    trajectory, or per A of a bifurcation sweep), and the fitted pieces."""

    metrics: dict[str, float]
    instances: dict[str, list[float]]
    model: node.ParamODE
    reducer: node.Reducer
    tuning: dict[str, dict[str, float]]
    timings: dict[str, float]


def validation_split(cfg: Config, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded (fit, validation) indices of the n training trajectories."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(cfg.seed + 2))
    n_val = max(1, round(n * cfg.val_fraction))
    return order[n_val:], order[:n_val]


def parameter_box(theta: torch.Tensor, cfg: Config) -> torch.Tensor:
    """(2, n_params) range the network rescales parameters by: the preset's box, or for loaded
    data the parameters' own range (widened where it is a single value)."""
    if not cfg.data:
        return torch.tensor([cfg.param_low, cfg.param_high])
    lo, hi = theta.min(0).values, theta.max(0).values
    return torch.stack([lo, torch.where(hi > lo, hi, lo + 1.0)])


def _fit(cfg, s, th, lr, box, epochs=None):
    return node.fit_node(
        s, th, steps=cfg.euler_steps, hidden=cfg.hidden, depth=cfg.depth,
        epochs=cfg.epochs if epochs is None else epochs, lr=lr, beta=cfg.beta, seed=cfg.seed,
        quiet=cfg.quiet, box=box,
    )  # fmt: skip


def tune_node(cfg, s, th, fit, val, box):
    """TRENDy over cfg.tune_lr on the fit split, the lowest validation nMSE kept."""
    grid = cfg.tune_lr or (cfg.lr,)
    scores, best = {}, None
    for lr in grid:
        model = _fit(cfg, s[fit], th[fit], lr, box)
        pred = node.predict(model, s[val][:, 0], th[val], cfg.euler_steps, s.shape[1])
        scores[f"lr={lr:g}"] = node.normalised_mse(pred, s[val])
        if best is None or scores[f"lr={lr:g}"] < best[0]:
            best = (scores[f"lr={lr:g}"], model)
    return best[1], scores


def sindycp_predict(cfg, fitted, s0, theta, bound):
    """Rollout of a (model, k) pair: the first k coordinates by the model, the rest held."""
    model, k = fitted
    head = baselines.predict_sindycp(model, s0[:, :k], theta, cfg.euler_steps, cfg.n_frames, bound)
    return torch.cat([head, s0[:, None, k:].expand(-1, cfg.n_frames, -1)], -1)


def tune_sindycp(cfg, s, th, fit, val, bound):
    """SINDyCP over thresholds x modelled components on the fit split, best validation nMSE."""
    thresholds = cfg.tune_sindy_threshold or (cfg.sindy_threshold,)
    components = cfg.tune_sindy_components or (0,)
    scores, best = {}, None
    s, th = s.cpu(), th.cpu()
    for k in dict.fromkeys(k or s.shape[-1] for k in components):
        for thr in thresholds:
            fitted = (baselines.fit_sindycp(s[fit][..., :k], th[fit], threshold=thr), k)
            pred = sindycp_predict(cfg, fitted, s[val][:, 0], th[val], bound)
            name = f"components={k},threshold={thr:g}"
            scores[name] = node.normalised_mse(pred, s[val])
            if best is None or scores[name] < best[0]:
                best = (scores[name], fitted)
    return best[1], scores


def load_dataset(cfg: Config) -> tuple[Config, dict[str, torch.Tensor]]:
    """Simulated data for cfg.seed, or cfg.data read from disk (cfg then takes the data's frame
    count, and euler_steps the nearest multiple of frames - 1)."""
    if not cfg.data:
        return cfg, data.make_dataset(cfg)
    dataset = data.load_fields(cfg.data, cfg)
    frames = dataset["train"].shape[1]
    steps = (frames - 1) * max(1, round(cfg.euler_steps / (frames - 1)))
    if cfg.measurement in ("fourier", "scattering-periodic") and (
        dataset["train"].shape[-1] != dataset["train"].shape[-2]
    ):
        raise ValueError(
            f"{cfg.data}: the {cfg.measurement} measurement needs square fields, got "
            f"{tuple(dataset['train'].shape[-2:])}; use --measurement scattering"
        )
    return dataclasses.replace(cfg, n_frames=frames, euler_steps=steps), dataset


def measured(cfg: Config, dataset: dict, noise: float, patches: float) -> dict[str, torch.Tensor]:
    """Train and test features of the corrupted fields, cached in `dataset` under `_features`:
    they depend only on the measurement, the corruption and the seed (its generator), so runs
    that share them (the shuffled control, the oracle's clean test set) measure once."""
    key = (cfg.measurement, cfg.scattering_j, cfg.scattering_l, noise, patches, cfg.seed)
    cache = dataset.setdefault("_features", {})
    if key not in cache:
        gen = torch.Generator().manual_seed(cfg.seed + 1)
        fields = {k: data.add_noise(dataset[k], noise, gen) for k in ("train", "test")}
        if patches > 0:
            fields = {k: data.add_patches(v, patches, gen) for k, v in fields.items()}
        cache[key] = {k: measure(cfg, v) for k, v in fields.items()}
    return cache[key]


def evaluate_run(cfg: Config, dataset: dict[str, torch.Tensor]) -> Run:
    """Fit and score everything for one configuration on one data set (see the module doc)."""
    raw = measured(cfg, dataset, cfg.noise, cfg.patches)
    reducer = node.Reducer(raw["train"], cfg.n_components)
    s = {k: reducer(v).to(cfg.device) for k, v in raw.items()}
    th = {k: dataset[f"theta_{k}"].to(cfg.device) for k in ("train", "test")}
    if cfg.shuffle_theta:  # negative control: parameters no longer match their trajectories
        perm = torch.randperm(len(th["train"]), generator=torch.Generator().manual_seed(cfg.seed))
        th["train"] = th["train"][perm.to(cfg.device)]
    box = parameter_box(dataset["theta_train"], cfg)
    fit, val = validation_split(cfg, len(s["train"]))
    start = time.perf_counter()
    model, tuning_node = tune_node(cfg, s["train"], th["train"], fit, val, box)
    timings = {"trendy_fit_seconds": time.perf_counter() - start}
    frames, test = cfg.n_frames, s["test"]

    def score(name: str, pred: torch.Tensor) -> None:
        pred = pred.to(test.device)
        metrics[f"{name}test_mse"] = float((pred - test).pow(2).mean())
        metrics[f"{name}test_nmse"] = node.normalised_mse(pred, test)
        instances[f"{name}test_nmse"] = node.per_trajectory_nmse(pred, test).tolist()

    metrics: dict[str, float] = {}
    instances: dict[str, list[float]] = {}
    tuning = {"TRENDy": tuning_node}
    pred = {k: node.predict(model, s[k][:, 0], th[k], cfg.euler_steps, frames) for k in s}
    score("", pred["test"])
    untrained = _fit(cfg, s["train"][fit], th["train"][fit], cfg.lr, box, epochs=0)
    score("untrained_", node.predict(untrained, test[:, 0], th["test"], cfg.euler_steps, frames))
    score("persistence_", test[:, :1].expand_as(test))
    score("mean_trajectory_", s["train"].mean(0, keepdim=True).expand_as(test))
    if cfg.noise > 0 or cfg.patches > 0:  # oracle: the clean fields, measured the same way
        score("oracle_", reducer(measured(cfg, dataset, 0.0, 0.0)["test"]))
    if cfg.sindycp:
        bound = 10 * float(s["train"].abs().max())
        start = time.perf_counter()
        sindy, tuning["SINDyCP"] = tune_sindycp(cfg, s["train"], th["train"], fit, val, bound)
        timings["sindycp_fit_seconds"] = time.perf_counter() - start
        score("sindycp_", sindycp_predict(cfg, sindy, test[:, 0].cpu(), th["test"].cpu(), bound))
    if cfg.system == "brusselator" and not cfg.data:
        metrics.update(
            bifurcation.classify_regimes(
                pred["train"][:, -1].cpu().numpy(), dataset["regime_train"].numpy(),
                pred["test"][:, -1].cpu().numpy(), dataset["regime_test"].numpy(),
            )
        )  # fmt: skip
        for line, rows in sweeps.locate(cfg, model, reducer).items():
            errs = [bifurcation.relative_error(r["pred"], r["true"]) for r in rows]
            metrics[f"{line}_rel_err"] = float(np.mean(errs))
            instances[f"{line}_rel_err"] = errs
            instances[f"{line}_rows"] = rows
    return Run(metrics, instances, model, reducer, tuning, timings)


CHECKPOINT = "model.safetensors"


def save_model(path: Path, model: node.ParamODE, reducer: node.Reducer) -> None:
    """The network's weights, its parameter box and the reducer's arrays, as one safetensors."""
    from safetensors.torch import save

    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    atomic_write_bytes(path, save(tensors | reducer.state()))


def load_model(cfg: Config, path: Path) -> tuple[node.ParamODE, node.Reducer]:
    """What `save_model` wrote, rebuilt for cfg's architecture; ValueError naming the file."""
    tensors = load_safetensors(path)
    try:
        reducer = node.Reducer.from_state(tensors)
        box = tensors["theta_box"]
        model = node.ParamODE(len(reducer.components), box.shape[-1], cfg.hidden, cfg.depth, box)
        model.load_state_dict({k: v for k, v in tensors.items() if not k.startswith("reducer.")})
    except (KeyError, IndexError, ValueError, RuntimeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{path}: not a TRENDy checkpoint for this run ({first})") from None
    return model.to(cfg.device), reducer


def config_of_run(workdir: Path) -> Config:
    """The Config a run was trained with, from its config.json (ValueError naming the file)."""
    path = workdir / "config.json"
    saved = read_json(path, "run config")
    try:
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()}
        return validate(Config(**fields))
    except (AttributeError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a trendy run config ({exc})") from None


def train_and_evaluate(
    cfg: Config, workdir: str | Path, dataset: dict[str, torch.Tensor] | None = None
) -> dict[str, float]:
    """Fit TRENDy (cfg.measurement) and SINDyCP for cfg.seed; writes workdir/config.json first,
    then model.safetensors (TRENDy and its reducer), metrics.json, tuning.json (validation
    scores of each grid point) and, for the Brusselator, bifurcations.json (the located lines
    per A)."""
    validate(cfg)
    if dataset is None:  # before anything is written: a bad --data file leaves no run folder
        cfg, dataset = load_dataset(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    run = evaluate_run(cfg, dataset)
    save_model(workdir / CHECKPOINT, run.model, run.reducer)
    rows = {k[: -len("_rows")]: v for k, v in run.instances.items() if k.endswith("_rows")}
    if rows:
        atomic_write_json(workdir / "bifurcations.json", rows)
    atomic_write_json(workdir / "tuning.json", run.tuning)
    atomic_write_json(workdir / "metrics.json", run.metrics)
    return run.metrics


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Reload the TRENDy model and reducer a previous `train` saved in workdir, re-derive its test
    trajectories from the run's config.json (simulated for its seed, or read from its --data),
    and score the model on them again: test_mse and test_nmse as train reported them, beside
    the persistence floor. Runs on cfg.device."""
    workdir = Path(workdir)
    run_cfg = dataclasses.replace(config_of_run(workdir), device=cfg.device, quiet=cfg.quiet)
    model, reducer = load_model(run_cfg, workdir / CHECKPOINT)
    run_cfg, dataset = load_dataset(run_cfg)
    raw = measured(run_cfg, dataset, run_cfg.noise, run_cfg.patches)
    test = reducer(raw["test"]).to(run_cfg.device)
    theta = dataset["theta_test"].to(run_cfg.device)
    pred = node.predict(model, test[:, 0], theta, run_cfg.euler_steps, run_cfg.n_frames)
    return {
        "test_mse": float((pred - test).pow(2).mean()),
        "test_nmse": node.normalised_mse(pred, test),
        "persistence_test_nmse": node.normalised_mse(test[:, :1].expand_as(test), test),
        "n_test": len(test),
    }
