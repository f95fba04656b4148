"""Quick benchmark: every method over the preset's seeds, claims computed from the metrics."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from . import sequence
from .config import Config, validate
from .results import atomic_write_json, claim, results_document, save_figure, summarize
from .train import build_model, chance_floor, prepare, tokenizer_floor, train_and_evaluate

PAPER = "gst"
POSE_MARGIN = 3.0
"""Joint must beat pose-only by at least this many points of rotation accuracy within 15 deg."""
PSNR_MARGIN = 0.3
"""Joint must beat NVS-only by at least this many dB of novel-view PSNR."""
PAPER_TABLE4 = "Table 4 (CO3D): joint training beats separately trained pose / NVS models"


def claims_from(metrics: dict) -> list[dict]:
    def mean(method: str, key: str) -> float:
        return metrics[method][key]["mean"]

    out = []
    if {"gst", "pose_only"} <= metrics.keys():
        a, b = mean("gst", "rot_acc15"), mean("pose_only", "rot_acc15")
        out.append(
            claim(
                "joint-pose-beats-pose-only",
                f"joint GST's rotation accuracy within 15 deg is >= {POSE_MARGIN} points above the "
                "pose-only model's (EST order, mean of seeds)",
                PAPER_TABLE4 + " on rotation accuracy @15/@30 deg",
                f"{a:.1f}% vs {b:.1f}% (acc@30 {mean('gst', 'rot_acc30'):.1f}% vs "
                f"{mean('pose_only', 'rot_acc30'):.1f}%)",
                a - b >= POSE_MARGIN,
            )
        )
    if {"gst", "nvs_only"} <= metrics.keys():
        a, b = mean("gst", "psnr"), mean("nvs_only", "psnr")
        out.append(
            claim(
                "joint-nvs-beats-nvs-only",
                f"joint GST's novel-view PSNR is >= {PSNR_MARGIN} dB above the NVS-only model's "
                "(GEN order, mean of seeds)",
                PAPER_TABLE4 + " (view synthesis side of the joint distribution)",
                f"{a:.2f} dB vs {b:.2f} dB (SSIM {mean('gst', 'ssim'):.3f} vs "
                f"{mean('nvs_only', 'ssim'):.3f})",
                a - b >= PSNR_MARGIN,
            )
        )
    return out


def performance(cfg: Config) -> list[dict]:
    """Tokens/s of one training step and of KV-cached sampling vs transformers' Llama."""
    from .perf import compare

    prep = prepare(cfg)
    torch.manual_seed(cfg.seed)
    model = build_model(cfg, prep.vocab)
    c = prep.codes["test"]
    k = min(cfg.perf_batch, c["obs"].shape[0])
    tokens, seg = sequence.build(prep.vocab, c["obs"][:k], c["cam"][:k], c["tgt"][:k], "gen")
    n = c["obs"].shape[1]
    res = compare(model, tokens, seg, n, cfg.width, cfg.depth, cfg.heads)
    what = f"{cfg.depth}x{cfg.width} decoder, batch {k} x {tokens.shape[1]} tokens, {cfg.device}"
    peer = "transformers LlamaForCausalLM (same size)"
    return [
        {
            "id": "train-step",
            "what": "training step (forward + backward), " + what,
            "ours_s": res["ours_train_s"],
            "peer": peer,
            "peer_s": res["peer_train_s"],
            "ratio": res["ours_train_s"] / res["peer_train_s"],
            "ours_tokens_per_s": res["train_tokens"] / res["ours_train_s"],
            "peer_tokens_per_s": res["train_tokens"] / res["peer_train_s"],
            "ours_params": res["ours_params"],
            "peer_params": res["peer_params"],
        },
        {
            "id": "sample-segment",
            "what": f"KV-cached sampling of {n} tokens, " + what,
            "ours_s": res["ours_sample_s"],
            "peer": peer + " .generate",
            "peer_s": res["peer_sample_s"],
            "ratio": res["ours_sample_s"] / res["peer_sample_s"],
            "ours_tokens_per_s": res["sample_tokens"] / res["ours_sample_s"],
            "peer_tokens_per_s": res["sample_tokens"] / res["peer_sample_s"],
        },
    ]


PLOTTED = ("rot_acc15", "rot_acc30", "centre_err", "psnr", "ssim")


def plot(metrics: dict, path: Path) -> None:
    fig, axes = plt.subplots(1, len(PLOTTED), figsize=(3.6 * len(PLOTTED), 3.2))
    for ax, key in zip(axes, PLOTTED, strict=True):
        names = [m for m in metrics if key in metrics[m]]
        ax.bar(
            names,
            [metrics[m][key]["mean"] for m in names],
            yerr=[metrics[m][key]["std"] for m in names],
            capsize=3,
            color=[f"C{i}" for i in range(len(names))],
        )
        ax.set_title(key)
        ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def run_bench(cfg: Config) -> dict:
    validate(cfg)
    start, cpu_start = time.perf_counter(), time.process_time()
    per_method: dict[str, dict[str, list[float]]] = {}
    for seed in cfg.seeds:
        run_cfg = dataclasses.replace(cfg, seed=seed)
        runs = {
            "tokenizer_floor": lambda c=run_cfg: tokenizer_floor(c),
            "chance_pose": lambda c=run_cfg: chance_floor(c),
        }
        for name in cfg.methods:
            workdir = Path(cfg.out) / f"seed{seed}" / name
            runs[name] = lambda c=run_cfg, w=workdir, m=name: train_and_evaluate(c, w, m)
        for name, run in runs.items():
            for key, value in run().items():
                per_method.setdefault(name, {}).setdefault(key, []).append(value)
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    plot(metrics, Path(cfg.results_dir) / "figures" / f"{cfg.name}_metrics.png")
    perf = performance(dataclasses.replace(cfg, seed=cfg.seeds[0]))
    doc = results_document(
        PAPER,
        cfg.name,
        list(cfg.seeds),
        metrics,
        claims_from(metrics),
        time.perf_counter() - start,
        cfg.device,
        perf,
    )
    # CPU seconds of this process: the cost on an idle machine when the wall clock is shared
    doc["cpu_seconds"] = round(time.process_time() - cpu_start, 2)
    atomic_write_json(Path(cfg.results_dir) / f"{cfg.name}.json", doc)
    return doc
