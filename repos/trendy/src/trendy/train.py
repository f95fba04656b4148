"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

One run = simulate (or reuse) the data for cfg.seed, corrupt it with cfg.noise, measure, reduce
with PCA, fit TRENDy's neural ODE and the SINDyCP baseline on the same reduced states, and score
both on the held-out test trajectories; for the Brusselator also locate the Hopf and Turing lines
and classify regimes from predicted final states.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import torch

from . import baselines, bifurcation, data, node, pde
from .config import Config, validate
from .results import atomic_write_json
from .scattering import MEASUREMENTS


def measure(cfg: Config, fields: torch.Tensor, chunk: int = 512) -> torch.Tensor:
    """Phi applied per channel and frame: (batch, frames, 2, n, n) -> (batch, frames, 2K)."""
    fn = MEASUREMENTS[cfg.measurement]
    # Chunks of a few hundred 2-D FFT stacks stay in cache: 2-3x faster on CPU than 4096.
    kwargs = (
        {"J": cfg.scattering_j, "L": cfg.scattering_l} if cfg.measurement == "scattering" else {}
    )
    flat = fields.reshape(-1, *fields.shape[-2:])
    feats = torch.cat(
        [fn(flat[i : i + chunk].to(cfg.device), **kwargs).cpu() for i in range(0, len(flat), chunk)]
    )
    return feats.reshape(*fields.shape[:2], -1)


def locate_bifurcations(cfg: Config, model: node.ParamODE, reducer: node.Reducer, repeats: int = 4):
    """Sweep B at each A in cfg.sweep_a; return per-A predicted and closed-form Hopf/Turing B."""
    gen = torch.Generator().manual_seed(cfg.seed + 10_000)
    rows = []
    for a in cfg.sweep_a:
        b = np.linspace(cfg.param_low[1], pde.hopf_line(a) + cfg.b_over_hopf, cfg.sweep_points)
        theta = torch.tensor([[a, bb] for bb in b for _ in range(repeats)], dtype=torch.float32)
        u0, v0 = data.initial_fields(cfg, theta, gen)
        s0 = reducer(measure(cfg, torch.stack([u0, v0], 1)[:, None]))[:, 0]
        eigs = node.jacobian_spectrum(model, s0, theta)
        real, cplx = (
            x.reshape(len(b), repeats).mean(1)
            for x in bifurcation.growth_indicators(eigs, 1.0 / cfg.euler_steps)
        )
        rows.append(
            {
                "a": a,
                "turing_pred": bifurcation.first_crossing(b, real),
                "hopf_pred": bifurcation.first_crossing(b, cplx),
                "turing_true": pde.turing_line(a, cfg.diffusion),
                "hopf_true": pde.hopf_line(a),
            }
        )
    return rows


def train_and_evaluate(
    cfg: Config, workdir: str | Path, dataset: dict[str, torch.Tensor] | None = None
) -> dict[str, float]:
    """Fit TRENDy (cfg.measurement) and SINDyCP for cfg.seed; writes workdir/config.json first."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    dataset = data.make_dataset(cfg) if dataset is None else dataset
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    fields = {k: data.add_noise(dataset[k], cfg.noise, gen) for k in ("train", "test")}
    if cfg.patches > 0:
        fields = {k: data.add_patches(v, cfg.patches, gen) for k, v in fields.items()}
    raw = {k: measure(cfg, v) for k, v in fields.items()}
    reducer = node.Reducer(raw["train"], cfg.n_components)
    s = {k: reducer(v).to(cfg.device) for k, v in raw.items()}
    th = {k: dataset[f"theta_{k}"].to(cfg.device) for k in ("train", "test")}

    model = node.fit_node(
        s["train"], th["train"], steps=cfg.euler_steps, hidden=cfg.hidden, depth=cfg.depth,
        epochs=cfg.epochs, lr=cfg.lr, beta=cfg.beta, seed=cfg.seed, quiet=cfg.quiet,
        box=torch.tensor([cfg.param_low, cfg.param_high]),
    )  # fmt: skip
    pred = {k: node.predict(model, s[k][:, 0], th[k], cfg.euler_steps, cfg.n_frames) for k in s}
    metrics = {
        "test_mse": float((pred["test"] - s["test"]).pow(2).mean()),
        "test_nmse": node.normalised_mse(pred["test"], s["test"]),
    }
    if cfg.sindycp:
        sindy = baselines.fit_sindycp(
            s["train"].cpu(), th["train"].cpu(), threshold=cfg.sindy_threshold
        )
        bound = 10 * float(s["train"].abs().max())
        sindy_test = baselines.predict_sindycp(
            sindy, s["test"][:, 0].cpu(), th["test"].cpu(), cfg.euler_steps, cfg.n_frames, bound
        )
        metrics["sindycp_test_mse"] = float((sindy_test - s["test"].cpu()).pow(2).mean())
        metrics["sindycp_test_nmse"] = node.normalised_mse(sindy_test, s["test"].cpu())
    if cfg.system == "brusselator":
        scores = bifurcation.classify_regimes(
            pred["train"][:, -1].cpu().numpy(), dataset["regime_train"].numpy(),
            pred["test"][:, -1].cpu().numpy(), dataset["regime_test"].numpy(),
        )  # fmt: skip
        metrics.update(scores)
        rows = locate_bifurcations(cfg, model, reducer)
        for line in ("hopf", "turing"):
            errs = [bifurcation.relative_error(r[f"{line}_pred"], r[f"{line}_true"]) for r in rows]
            metrics[f"{line}_rel_err"] = float(np.mean(errs))
        atomic_write_json(workdir / "bifurcations.json", rows)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
