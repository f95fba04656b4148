"""Quick benchmark: one base model, every eraser over the preset's seeds, claims computed from
the measured metrics with the thresholds below, results JSON + figures."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from .config import Config, validate
from .evaluate import eval_prompts, evaluate_model, relative_to_original
from .models import sample
from .results import atomic_write_json, claim, results_document, save_figure, summarize
from .train import erase_with, prepare, run_seed

PAPER = "cogfd"
FORGET_DROP_MIN = 50.0
"""Claim 1: CoGFD lowers the forget rate by at least this many points (train and held-out)."""
RETAIN_DROP_MAX = 10.0
"""Claim 2: CoGFD's retain accuracy (sub-concepts, other combinations) drops at most this much."""
BASELINES = ("cogfd_nograph", "esd_x", "ca", "uce", "naive")


def claims_from(metrics: dict) -> list[dict]:
    def mean(method: str, key: str) -> float:
        return metrics[method][key]["mean"]

    drop, held = mean("cogfd", "forget_drop"), mean("cogfd", "forget_drop_held_out")
    sub, other = mean("cogfd", "retain_drop_sub"), mean("cogfd", "retain_drop_other")
    ratios = {m: mean(m, "erase_retain_ratio") for m in ("cogfd",) + BASELINES if m in metrics}
    rivals = {m: r for m, r in ratios.items() if m != "cogfd"}
    return [
        claim(
            "cogfd-forget-drop",
            f"CoGFD lowers the forget rate (oracle says red AND circle) by >= {FORGET_DROP_MIN:g} "
            "points on the erase-set prompts and on held-out synonym prompts (mean of seeds)",
            "CoGFD erases the combination (lowest CLIP score on forget prompts among erasers, "
            "HarmfulCmb)",
            f"erase-set drop {drop:.1f} pts (forget rate {mean('original', 'forget_rate'):.1f} -> "
            f"{mean('cogfd', 'forget_rate'):.1f}); held-out drop {held:.1f} pts",
            drop >= FORGET_DROP_MIN and held >= FORGET_DROP_MIN,
        ),
        claim(
            "cogfd-retains-sub-concepts",
            f"CoGFD's retain accuracy drops by <= {RETAIN_DROP_MAX:g} points on the sub-concepts "
            "(red, circle) and on other combinations (red square, blue circle, ...)",
            "sub-concepts stay generable (highest retain CLIP score among erasers)",
            f"sub-concepts drop {sub:.1f} pts, other combinations drop {other:.1f} pts",
            sub <= RETAIN_DROP_MAX and other <= RETAIN_DROP_MAX,
        ),
        claim(
            "cogfd-best-erase-retain",
            "CoGFD has the highest erase-retain ratio (oracle confidence in place of CLIP) of all "
            "methods",
            "CoGFD has the best erase-retain score |dCLIP_forget / dCLIP_retain| on HarmfulCmb",
            f"CoGFD {ratios['cogfd']:.2f} vs "
            + ", ".join(f"{m} {r:.2f}" for m, r in rivals.items()),
            all(ratios["cogfd"] > r for r in rivals.values()),
        ),
    ]


def performance_from(metrics: dict) -> list[dict]:
    ours = metrics["cogfd"]["erase_seconds"]["mean"]
    perf = [
        {
            "id": f"erase-time-vs-{m}",
            "what": "wall time of one erasure (CPU, 1 thread), including its training images",
            "ours_s": round(ours, 3),
            "peer": m,
            "peer_s": round(metrics[m]["erase_seconds"]["mean"], 3),
            "ratio": round(ours / max(metrics[m]["erase_seconds"]["mean"], 1e-9), 3),
        }
        for m in BASELINES
        if m in metrics
    ]
    sps = {m: metrics[m]["samples_per_second"]["mean"] for m in ("original", "cogfd")}
    perf.append(
        {
            "id": "sampling-speed",
            "what": "seconds per generated sample (DDIM + classifier-free guidance, oracle aside)",
            "ours_s": round(1 / sps["cogfd"], 5),
            "peer": "original (unedited) model",
            "peer_s": round(1 / sps["original"], 5),
            "ratio": round(sps["original"] / sps["cogfd"], 3),
        }
    )
    return perf


def plot(metrics: dict, path: Path) -> None:
    keys = [
        ("forget_rate", "forget rate, erase set"),
        ("forget_rate_held_out", "forget rate, held-out synonyms"),
        ("retain_acc_sub", "retain acc., sub-concepts"),
        ("retain_acc_other", "retain acc., other combos"),
    ]
    methods = [m for m in metrics if not m.startswith("cogfd_t")]
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(keys)
    for j, (key, label) in enumerate(keys):
        means = [metrics[m][key]["mean"] for m in methods]
        stds = [metrics[m][key]["std"] for m in methods]
        xs = [i + (j - 1.5) * width for i in range(len(methods))]
        ax.bar(xs, means, width, yerr=stds, label=label, capsize=2)
    ax.set_xticks(range(len(methods)), methods)
    ax.set_ylabel("% of samples (oracle)")
    ax.set_title("Erasing 'red circle': forget (lower is better) and retain (higher is better)")
    ax.legend(fontsize=8, ncol=2)
    save_figure(fig, path)
    plt.close(fig)


def window_ablation(stage, cfg: Config, per_method: dict) -> dict[str, dict[str, list[float]]]:
    """CoGFD with wider timestep windows [t_start, t_end), first seed only (reported only)."""
    if "cogfd" not in cfg.methods:
        return {}
    seed = cfg.seeds[0]
    groups = eval_prompts(cfg.combination, stage.erase)
    orig = {k: v[0] for k, v in per_method["original"].items()}
    out = {}
    for start in cfg.window_ablation:
        run_cfg = dataclasses.replace(cfg, t_start=start)
        gen = torch.Generator().manual_seed(seed * 100 + 1)
        torch.manual_seed(seed * 100 + 1)
        unet = erase_with("cogfd", stage, run_cfg, gen)
        m = evaluate_model(
            unet, stage.text_encoder, stage.oracle, groups, run_cfg, seed, cfg.combination
        )
        m.update(relative_to_original(m, orig))
        out[f"cogfd_t{start}-{cfg.t_end}"] = {k: [v] for k, v in m.items()}
    return out


SAMPLE_PROMPTS = ("red circle", "crimson ring", "red", "circle", "red square", "blue circle")


def plot_samples(stage, unets: dict, cfg: Config, path: Path) -> None:
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
    save_figure(fig, path)
    plt.close(fig)


def run_bench(cfg: Config) -> dict:
    validate(cfg)
    torch.set_num_threads(cfg.threads)
    start = time.perf_counter()
    workdir = Path(cfg.out)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    stage = prepare(cfg, workdir)
    per_method: dict[str, dict[str, list[float]]] = {}
    kept: dict = {}
    for seed in cfg.seeds:
        keep = kept if seed == cfg.seeds[0] else None
        for name, values in run_seed(stage, cfg, seed, keep).items():
            for key, value in values.items():
                per_method.setdefault(name, {}).setdefault(key, []).append(value)
    per_method.update(window_ablation(stage, cfg, per_method))
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    metrics["original"]["pretrain_seconds"] = summarize([stage.pretrain_seconds])
    metrics["original"]["oracle_colour_acc"] = summarize([stage.oracle_accuracy[0]])
    metrics["original"]["oracle_shape_acc"] = summarize([stage.oracle_accuracy[1]])
    claims = claims_from(metrics) if "cogfd" in metrics else []
    performance = performance_from(metrics) if "cogfd" in metrics else None
    figures = Path(cfg.results_dir) / "figures"
    plot(metrics, figures / f"{cfg.name}_metrics.png")
    plot_samples(stage, kept, cfg, figures / f"{cfg.name}_samples.png")
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
    atomic_write_json(Path(cfg.results_dir) / f"{cfg.name}.json", doc)
    return doc
