"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

One seed of the whole protocol: gold model and resampled labels, classifier h, the pairs of
Q(x+|x), the GenRe pair model, then every recourse method (tuned on validation negatives) on
the same test negatives, plus GenRe's oracle (sampling Q itself), a floor (a random admissible
positive) and a negative control (GenRe's sampler on an untrained pair model).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from . import baselines
from .config import CONTROL, FLOOR, ORACLE, Config, validate
from .pairs import partner_sets, sample_partners
from .protocol import (
    World,
    fit_world,
    make_runner,
    new_pair_model,
    rows_for,
    time_per_instance,
    tune,
)
from .protocol import (
    evaluate as recourse_metrics,
)
from .results import atomic_write_json, load_safetensors, read_config, save_safetensors
from .runtime import limit_threads, resolve_device

CHECKPOINT = "pair_model.safetensors"
TIMED = ("GenRe", "GenRe-nocache", "NNR", "Wachter", "REVISE", "GrowingSpheres", "DiCE")


def _split(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    order = torch.randperm(n, generator=g)
    n_val = max(1, n // 10)
    return order[n_val:], order[:n_val]


def fit_pair_model(
    cfg: Config,
    x_neg: torch.Tensor,
    y_neg: torch.Tensor,
    x_pos: torch.Tensor,
    immutable: torch.Tensor,
    lam: float | None = None,
):
    """Maximum likelihood on pairs (x, x+ ~ Q(.|x)), one partner resampled per epoch.

    As official train_bpm.py: D- and D+ are each split 90/10; training pairs join training D-
    to training D+ and validation pairs validation D- to validation D+; the validation loss is
    checked every `eval_every` epochs (and after the last) and the best checked weights kept.
    Returns the model and its loss log."""
    lam = cfg.lam if lam is None else lam
    g = torch.Generator().manual_seed(cfg.seed)
    (neg_tr, neg_val), (pos_tr, pos_val) = _split(len(x_neg), g), _split(len(x_pos), g)
    if len(pos_tr) == 0:
        pos_tr = pos_val  # a single positive: both splits use it
    sets = {}
    for name, neg, pos in (("train", neg_tr, pos_tr), ("val", neg_val, pos_val)):
        index, prob, has = partner_sets(x_neg[neg], x_pos[pos], lam, cfg.top_k, immutable)
        sets[name] = (x_neg[neg][has], y_neg[neg][has], index[has], prob[has], x_pos[pos])
    xs, ys, index, prob, pos = sets["train"]
    if len(xs) == 0:
        raise ValueError("no training negative has an admissible partner in D+")
    model = new_pair_model(cfg, x_neg.shape[1])
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    dev = lambda t: t.to(cfg.device)
    xv, yv, iv, pv, posv = sets["val"]
    val_x, val_y = dev(xv), dev(yv)
    val_partner = dev(posv[sample_partners(iv, pv, g)]) if len(xv) else None
    best, best_state, log = float("inf"), None, {"train": [], "val": []}
    quiet = cfg.quiet or not sys.stderr.isatty()
    bar = tqdm(range(cfg.epochs), desc=f"GenRe lambda={lam:g}", disable=quiet, leave=False)
    for epoch in bar:
        model.train()
        partner = pos[sample_partners(index, prob, g)]
        losses = []
        for b in torch.randperm(len(xs), generator=g).split(cfg.batch_size):
            loss = model.loss(dev(xs[b]), dev(ys[b]), dev(partner[b]), dev(torch.ones(len(b))))
            loss = loss.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        log["train"].append(float(np.mean(losses)))
        if epoch % cfg.eval_every and epoch != cfg.epochs - 1:
            continue
        model.eval()
        if val_partner is None:  # too few negatives for a validation split: keep the last
            best_state = {k: t.detach().clone() for k, t in model.state_dict().items()}
            continue
        with torch.no_grad():
            ones = torch.ones(len(val_x), device=cfg.device)
            v = float(model.loss(val_x, val_y, val_partner, ones).mean())
        log["val"].append((epoch, v))
        if v < best:
            best, best_state = v, {k: t.detach().clone() for k, t in model.state_dict().items()}
        bar.set_postfix(train=f"{log['train'][-1]:.3f}", val=f"{v:.3f}")
    model.load_state_dict(best_state)
    return model.eval(), log


def load_pair_model(cfg: Config, d: int, state: dict[str, torch.Tensor], path: Path):
    """A pair model for d features with the weights `state` read from `path` (named in errors)."""
    model = new_pair_model(cfg, d)
    try:
        model.load_state_dict({k: v.to(cfg.device) for k, v in state.items()})
    except RuntimeError as exc:  # missing / unexpected keys or wrong shapes
        first = str(exc).strip().splitlines()[0]
        raise ValueError(
            f"{path}: does not fit this config's pair model ({first}); delete it or train again"
        ) from None
    return model.eval()


def _pair_model(cfg: Config, w: World, workdir: Path, saved: dict | None):
    """The GenRe pair model: the checkpoint's weights `saved` (with --resume), else trained
    here and saved to workdir."""
    x_tr = w.xt(w.train)
    x_neg, y_neg = x_tr[w.neg_mask], torch.as_tensor(w.y[w.train][w.neg_mask]).float()
    ckpt = workdir / CHECKPOINT
    if saved is not None:
        return load_pair_model(cfg, w.x.shape[1], saved, ckpt), {}
    model, log = fit_pair_model(cfg, x_neg, y_neg, w.x_pos, w.immutable)
    save_safetensors(ckpt, model.state_dict())
    return model, log


def _means(instances: dict) -> dict[str, float]:
    return {k: float(np.mean(v)) for k, v in instances.items()}


def _sweeps(cfg: Config, w: World, temperature: float) -> dict[str, dict[str, float]]:
    """Trade-off curves on the evaluated negatives: GenRe over temperatures (same model), the
    exact target Q over lambdas, and GenRe retrained at other lambdas."""
    x_neg, out = w.xt(w.negatives), {}
    for tau in cfg.sweep_temperatures:
        cf = make_runner(w, "GenRe", tau, phase=f"sweep{tau}")(x_neg)
        out[f"GenRe@tau={tau:g}"] = _means(recourse_metrics(w, x_neg, cf))
    for lam in cfg.sweep_lams:
        cf = make_runner(w, ORACLE, lam, phase=f"sweep{lam}")(x_neg)
        out[f"{ORACLE}@lam={lam:g}"] = _means(recourse_metrics(w, x_neg, cf))
    x_tr = w.xt(w.train)
    y_neg = torch.as_tensor(w.y[w.train][w.neg_mask]).float()
    for lam in cfg.sweep_retrain_lams:
        model, _ = fit_pair_model(cfg, x_tr[w.neg_mask], y_neg, w.x_pos, w.immutable, lam)
        sub = dataclasses.replace(w, models={**w.models, "GenRe": model})
        cf = make_runner(sub, "GenRe", temperature, phase=f"retrain{lam}")(x_neg)
        out[f"GenRe@lam={lam:g}"] = _means(recourse_metrics(w, x_neg, cf))
    return out


def run_protocol(cfg: Config, workdir: Path) -> dict:
    """Everything for one seed. Returns {"metrics": flat "Method/metric" means, "instances":
    per-negative arrays per method, "timing": per-instance seconds, "tuned", "sweeps",
    "recourses", "loss_log"}."""
    limit_threads(cfg.threads)  # as the CLI does; here for callers that bypass it
    ckpt = workdir / CHECKPOINT
    saved = load_safetensors(ckpt) if cfg.resume and ckpt.exists() else None  # fail early
    w = fit_world(cfg)
    model, loss_log = _pair_model(cfg, w, workdir, saved)
    w.models["GenRe"] = model
    w.models[CONTROL] = new_pair_model(cfg, w.x.shape[1]).eval()  # never trained
    if "REVISE" in cfg.methods:
        w.models["VAE"] = baselines.fit_vae(w.x[w.train], cfg.vae_epochs, cfg.seed)
    names = [*cfg.methods, ORACLE, FLOOR, CONTROL]
    tuned = {m: tune(w, m) for m in names if m != CONTROL}
    tuned[CONTROL] = {"value": tuned["GenRe"]["value"], "why": "GenRe's tuned temperature"}
    out = {"instances": {}, "timing": {}, "tuned": tuned, "loss_log": loss_log}
    flat, recourses = {}, {"x": w.x[w.negatives], "train_x": w.x[w.train], "train_y": w.y[w.train]}
    x_all = w.xt(w.negatives)
    for name in names:
        x_neg = w.xt(rows_for(w, name, w.negatives))
        runner = make_runner(w, name, tuned[name]["value"])
        start = time.perf_counter()
        if name == "DiCE":  # DiCE explains one row at a time anyway: time that very run
            times, cf = time_per_instance(runner, x_neg)
        else:
            cf = runner(x_neg)
        seconds = time.perf_counter() - start
        if name in TIMED and name != "DiCE":
            fresh = make_runner(w, name, tuned[name]["value"], phase="timing")
            times, _ = time_per_instance(fresh, x_all[: cfg.n_timing])
        inst = recourse_metrics(w, x_neg, cf)
        out["instances"][name] = inst
        flat.update({f"{name}/{k}": v for k, v in _means(inst).items()})
        flat[f"{name}/seconds_per_recourse"] = seconds / len(x_neg)
        if name in TIMED:
            out["timing"][name] = times
            flat[f"{name}/seconds_per_instance"] = float(times.mean())
        recourses[name] = cf.detach().numpy()
    nocache = make_runner(w, "GenRe-nocache", tuned["GenRe"]["value"], phase="timing")
    out["timing"]["GenRe-nocache"], _ = time_per_instance(nocache, x_all[: cfg.n_timing])
    flat["GenRe-nocache/seconds_per_instance"] = float(out["timing"]["GenRe-nocache"].mean())
    out["sweeps"] = _sweeps(cfg, w, tuned["GenRe"]["value"])
    flat["data/n_negatives"] = float(len(w.negatives))
    flat["data/n_val_negatives"] = float(len(w.val_negatives))
    flat["data/n_pos_partners"] = float(len(w.x_pos))
    flat["data/n_train_negatives"] = float(w.neg_mask.sum())
    out["metrics"], out["recourses"] = flat, recourses
    return out


def train_and_evaluate_full(cfg: Config, workdir: str | Path) -> dict:
    """run_protocol with config.json written first and metrics.json after."""
    validate(cfg)
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    result = run_protocol(cfg, workdir)
    atomic_write_json(workdir / "metrics.json", result["metrics"])
    return result


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Run one seed of the protocol and return its metrics; writes workdir/config.json first."""
    return train_and_evaluate_full(cfg, workdir)["metrics"]


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Reload the GenRe pair model a previous `train` saved in workdir and evaluate it again:
    the run's world is rebuilt from its config.json (deterministic in the seed), GenRe's
    temperature tuned on the validation negatives as in `train`, and its recourses for the
    evaluated negatives measured. Returns GenRe's metrics ("GenRe/cost", ...), equal to the ones
    `train` reported on the same machine. Device, threads and progress come from `cfg`."""
    workdir = Path(workdir)
    run = read_config(workdir / "config.json", Config, validate)
    run = dataclasses.replace(
        run, device=resolve_device(cfg.device), threads=cfg.threads, quiet=cfg.quiet
    )
    state = load_safetensors(workdir / CHECKPOINT)  # read first: a bad file fails before work
    limit_threads(run.threads)
    w = fit_world(run)
    w.models["GenRe"] = load_pair_model(run, w.x.shape[1], state, workdir / CHECKPOINT)
    tuned = tune(w, "GenRe")
    x_neg = w.xt(w.negatives)
    cf = make_runner(w, "GenRe", tuned["value"])(x_neg)
    metrics = {f"GenRe/{k}": v for k, v in _means(recourse_metrics(w, x_neg, cf)).items()}
    return {**metrics, "GenRe/temperature": float(tuned["value"])}
