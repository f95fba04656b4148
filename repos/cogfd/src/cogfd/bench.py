"""Benchmark: one base model and judge, equal tuning on a validation seed, every eraser over the
preset's seeds, ablations and the stall experiment, claims (claims.py), results JSON + figures."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from .claims import RIVALS, claims_from
from .config import Config, validate
from .evaluate import eval_prompts, evaluate_model
from .judge import judge_agreement
from .models import sample
from .results import atomic_write_json, results_document, summarize, write_results
from .runtime import resolve_device, results_dir_of
from .train import erase_with, images_of, method_generator, prepare, run_method, run_seed
from .tuning import tune

PAPER = "cogfd"
BASELINES = RIVALS


def performance_from(metrics: dict) -> list[dict]:
    ours = metrics["cogfd"]["erase_seconds"]["mean"]
    perf = [
        {
            "id": f"erase-time-vs-{m}",
            "what": "wall time of one erasure (CPU, 1 thread), including its training images",
            "unit": "s",
            "higher_is_better": False,
            "ours_value": round(ours, 3),
            "peer": m,
            "peer_value": round(metrics[m]["erase_seconds"]["mean"], 3),
        }
        for m in BASELINES
        if m in metrics
    ]
    sps = {m: metrics[m]["samples_per_second"]["mean"] for m in ("original", "cogfd")}
    perf.append(
        {
            "id": "sampling-speed",
            "what": "generated samples per second (DDIM + classifier-free guidance, judge aside)",
            "unit": "samples/s",
            "higher_is_better": True,
            "ours_value": round(sps["cogfd"], 2),
            "peer": "original (unedited) model",
            "peer_value": round(sps["original"], 2),
        }
    )
    return perf


def plot(metrics: dict):
    keys = [
        ("forget_rate", "forget rate, erase set"),
        ("forget_rate_held_out", "forget rate, held-out synonyms"),
        ("retain_acc_sub", "retain acc., sub-concepts"),
        ("retain_acc_other", "retain acc., other combos"),
    ]
    methods = [m for m in metrics if not m.startswith(("cogfd_t", "cogfd_steps"))]
    keys = [(k, label) for k, label in keys if k in metrics["original"]]
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(keys)
    for j, (key, label) in enumerate(keys):
        means = [metrics[m][key]["mean"] for m in methods]
        stds = [metrics[m][key]["std"] for m in methods]
        xs = [i + (j - (len(keys) - 1) / 2) * width for i in range(len(methods))]
        ax.bar(xs, means, width, yerr=stds, label=label, capsize=2)
    ax.set_xticks(range(len(methods)), methods)
    ax.set_ylabel("% of samples (oracle)")
    ax.set_title("Erasing 'red circle': forget (lower is better) and retain (higher is better)")
    ax.legend(fontsize=8, ncol=2)
    return fig


def plot_pareto(metrics: dict, tuning: dict):
    """Forget drop against retain drop: every grid point of every tuned method on the validation
    seed (small markers, joined in grid order) and the tuned setting's mean over the test seeds
    with its standard deviation (large markers). Up and left is better."""
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    methods = [m for m in ("cogfd",) + BASELINES + ("cogfd_noerase",) if m in metrics]
    for i, m in enumerate(methods):
        colour = colours[i % len(colours)]
        grid = tuning.get("methods", {}).get(m)
        if grid and "forget_drop" in grid:
            ax.plot(grid["retain_drop"], grid["forget_drop"], ".-", color=colour, alpha=0.4)
        ax.errorbar(
            metrics[m]["retain_drop"]["mean"],
            metrics[m]["forget_drop"]["mean"],
            xerr=metrics[m]["retain_drop"]["std"],
            yerr=metrics[m]["forget_drop"]["std"],
            fmt="o",
            ms=8,
            color=colour,
            label=m,
            capsize=2,
        )
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_xlabel("retain drop (points; lower is better)")
    ax.set_ylabel("forget drop (points; higher is better)")
    ax.set_title("Forget/retain trade-off: grid (validation seed) and tuned (test seeds)")
    ax.legend(fontsize=8)
    return fig


def ablations(stage, cfg: Config, per_method: dict, tuned: dict) -> dict[str, dict]:
    """CoGFD with wider timestep windows and with more steps, on every seed (reported only)."""
    if "cogfd" not in cfg.methods:
        return {}
    base = dataclasses.replace(cfg, **tuned.get("cogfd", {}))
    variants = {f"cogfd_t{t}-{cfg.t_end}": {"t_start": t} for t in cfg.window_ablation}
    variants.update({f"cogfd_steps{n}": {"erase_steps": n} for n in cfg.steps_ablation})
    out: dict[str, dict[str, list[float]]] = {}
    for label, change in variants.items():
        for i, seed in enumerate(cfg.seeds):
            orig = {k: v[i] for k, v in per_method["original"].items()}
            run_cfg = dataclasses.replace(base, **change)
            for key, value in run_method("cogfd", stage, run_cfg, seed, orig)[1].items():
                out.setdefault(label, {}).setdefault(key, []).append(value)
    return out


def swap_experiment(stage, cfg: Config, per_method: dict, tuned: dict) -> dict:
    """Why CoGFD stalls on some seeds: rerun it with the training images of the seed that
    erased best and the optimisation noise (t, x_t draws) of the seed that erased worst, and
    the other way round. Whichever factor moves the forget rate decides the stall."""
    if "cogfd" not in cfg.methods or len(cfg.seeds) < 2:
        return {}
    rates = per_method["cogfd"]["forget_rate"]
    best, worst = cfg.seeds[rates.index(min(rates))], cfg.seeds[rates.index(max(rates))]
    run_cfg = dataclasses.replace(cfg, **tuned.get("cogfd", {}))
    groups = eval_prompts(cfg.combination, stage.erase)
    out = {"best_seed": best, "worst_seed": worst, "runs": []}
    for img_seed, opt_seed in ((best, worst), (worst, best)):
        images = images_of(
            stage, cfg.combination, cfg.n_train_images, cfg, method_generator("cogfd", img_seed)
        )
        gen = method_generator("cogfd", opt_seed)
        unet, info = erase_with("cogfd", stage, run_cfg, gen, images)
        m = evaluate_model(
            unet, stage.text_encoder, stage.oracle, groups, run_cfg, opt_seed, cfg.combination
        )
        out["runs"].append(
            {"images_of_seed": img_seed, "noise_of_seed": opt_seed, "forget_rate": m["forget_rate"]}
            | info
        )
    return out


SAMPLE_PROMPTS = ("red circle", "crimson ring", "red", "circle", "red square", "blue circle")


def plot_samples(stage, unets: dict, cfg: Config):
    """Four samples per prompt (columns) from each kept model (rows), same noise per column."""
    names = [m for m in ("original", "cogfd", "esd_x", "uce") if m in unets]
    n = 4
    fig, axes = plt.subplots(len(names), len(SAMPLE_PROMPTS), figsize=(12, 2.1 * len(names)))
    axes = [axes] if len(names) == 1 else axes
    for row, name in zip(axes, names, strict=True):
        gen = torch.Generator().manual_seed(123)
        prompts = [p for p in SAMPLE_PROMPTS for _ in range(n)]
        images = sample(
            unets[name],
            stage.text_encoder,
            prompts,
            cfg.image_size,
            cfg.ddim_steps,
            cfg.guidance,
            gen,
        ).cpu()
        images = (images + 1) / 2
        for j, ax in enumerate(row):
            strip = torch.cat(list(images[j * n : (j + 1) * n]), dim=2)
            ax.imshow(strip.permute(1, 2, 0).numpy(), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(SAMPLE_PROMPTS[j] if row is axes[0] else "", fontsize=9)
        row[0].set_ylabel(name, fontsize=9)
    return fig


def run_bench(cfg: Config) -> dict:
    """The benchmark; writes <results dir>/<name>.json and its figures together at the end
    (results_dir_of: --results-dir, else runs/<name>)."""
    validate(cfg)
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    torch.set_num_threads(cfg.threads)
    start = time.perf_counter()
    workdir = Path(cfg.out)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    stage = prepare(cfg, workdir)
    agreement = judge_agreement(
        stage.oracle,
        stage.unet,
        stage.text_encoder,
        cfg.image_size,
        cfg.ddim_steps,
        cfg.guidance,
        cfg.base_seed,
        n=cfg.eval_samples * 4,
    )
    tuned, tuning = tune(stage, cfg)
    per_method: dict[str, dict[str, list[float]]] = {}
    kept: dict = {}
    for seed in cfg.seeds:
        keep = kept if seed == cfg.seeds[0] else None
        for name, values in run_seed(stage, cfg, seed, keep, tuned).items():
            for key, value in values.items():
                per_method.setdefault(name, {}).setdefault(key, []).append(value)
    swap = swap_experiment(stage, cfg, per_method, tuned)
    per_method.update(ablations(stage, cfg, per_method, tuned))
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    metrics["original"]["pretrain_seconds"] = summarize([stage.pretrain_seconds])
    for key, value in stage.judge_validation.items():
        metrics["original"][f"judge_{key}"] = summarize([value])
    for key in ("shape_agree", "colour_agree", "both_agree"):
        metrics["original"][f"judges_{key}"] = summarize([agreement[key]])
    claims = claims_from(metrics) if "cogfd" in metrics else []
    performance = performance_from(metrics) if "cogfd" in metrics else None
    figures = {
        f"{cfg.name}_metrics.png": plot(metrics),
        f"{cfg.name}_samples.png": plot_samples(stage, kept, cfg),
    }
    if "cogfd" in metrics:
        figures[f"{cfg.name}_pareto.png"] = plot_pareto(metrics, tuning)
    doc = results_document(
        PAPER,
        cfg.name,
        list(cfg.seeds),
        metrics,
        claims,
        time.perf_counter() - start,
        cfg.device,
        performance,
    )
    doc["graph"] = {"erase": stage.erase, "retain": stage.retain}
    doc["tuning"] = tuning
    doc["judge_agreement"] = agreement
    doc["stall_swap"] = swap
    write_results(results_dir_of(cfg), cfg.name, doc, figures)
    return doc
