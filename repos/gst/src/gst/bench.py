"""Benchmark: floors, a negative control and every method over the preset's seeds; paired gates."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

from . import sequence
from .config import Config, validate
from .floors import FLOORS
from .results import (
    claim,
    figure_png,
    paired_interval,
    results_document,
    summarize,
    write_results,
)
from .runtime import resolve_device, results_dir_of
from .train import build_model, eval_ar, prepare, steps_for, train_and_evaluate

PAPER = "gst"
POSE_MARGIN = 3.0
"""A pose gate needs at least this many points of rotation accuracy within 15 deg."""
PSNR_MARGIN = 0.3
"""A view-synthesis gate against another model needs at least this many dB of PSNR."""
PAPER_TABLE4 = "Table 4 (CO3D): joint training beats separately trained pose / NVS models"
CONTROL = "untrained"
"""Negative control: the joint model's architecture at initialisation, evaluated like the
others; every gate is recomputed with it in place of the tested model and must fail."""
TUNING = (
    "none for any method: every model uses the preset's lr, batch, warm-up and sampling "
    "(top-k, temperature); steps equal per task order"
)

# (id, statement, paper, tested (method, metric), reference (method(s), metric), margin, unit)
GATES = [
    (
        "joint-pose-beats-pose-only",
        (
            "the alternating joint GST's rotation accuracy within 15 deg (sampled, EST order) is "
            f">= {POSE_MARGIN} points above the pose-only model's, paired over seeds, interval > 0"
        ),
        PAPER_TABLE4 + " on rotation accuracy @15/@30 deg",
        ("gst", "rot_acc15"),
        (("pose_only",), "rot_acc15"),
        POSE_MARGIN,
        "points",
    ),
    (
        "joint-nvs-beats-nvs-only",
        (
            f"the alternating joint GST's novel-view PSNR is >= {PSNR_MARGIN} dB above the NVS-only "
            "model's, paired over seeds, interval > 0"
        ),
        PAPER_TABLE4 + " (view synthesis side of the joint distribution)",
        ("gst", "psnr"),
        (("nvs_only",), "psnr"),
        PSNR_MARGIN,
        "dB",
    ),
    (
        "gen-joint-pose-beats-pose-only",
        (
            "the GEN-only joint GST's rotation accuracy within 15 deg (likelihood ranking of "
            f"candidate cameras) is >= {POSE_MARGIN} points above the pose-only model's (same "
            "ranking), paired over seeds, interval > 0"
        ),
        PAPER_TABLE4 + "; the official sampler uses the GEN order only",
        ("gst_gen", "rank_rot_acc15"),
        (("pose_only",), "rank_rot_acc15"),
        POSE_MARGIN,
        "points",
    ),
    (
        "gen-joint-nvs-beats-nvs-only",
        (
            f"the GEN-only joint GST's novel-view PSNR is >= {PSNR_MARGIN} dB above the NVS-only "
            "model's, paired over seeds, interval > 0"
        ),
        PAPER_TABLE4 + "; the official sampler uses the GEN order only",
        ("gst_gen", "psnr"),
        (("nvs_only",), "psnr"),
        PSNR_MARGIN,
        "dB",
    ),
    (
        "ar-nvs-beats-floors",
        (
            "the NVS-only model's PSNR is above the better trivial floor of each seed (mean "
            "training image, nearest training view), paired over seeds, interval > 0"
        ),
        "view synthesis is learned (precondition of the Table 4 comparison)",
        ("nvs_only", "psnr"),
        (("mean_image", "nearest_view"), "psnr"),
        0.0,
        "dB",
    ),
    (
        "ar-pose-beats-chance",
        (
            f"the pose-only model's rotation accuracy within 15 deg (sampled) is >= {POSE_MARGIN} "
            "points above the image-blind chance floor, paired over seeds, interval > 0"
        ),
        "localisation is learned (precondition of the Table 4 comparison)",
        ("pose_only", "rot_acc15"),
        (("chance_pose",), "rot_acc15"),
        POSE_MARGIN,
        "points",
    ),
]


def beats(interval: dict, margin: float) -> bool:
    """The paired gate: mean difference >= margin and the interval's lower end above 0."""
    return interval["lo"] is not None and interval["mean"] >= margin and interval["lo"] > 0


def _fmt(iv: dict, unit: str) -> str:
    if iv["lo"] is None:
        return f"{iv['mean']:+.2f} {unit} (one seed: no interval)"
    return f"{iv['mean']:+.2f} {unit} [{iv['lo']:+.2f}, {iv['hi']:+.2f}]"


def claims_from(metrics: dict) -> list[dict]:
    """Every gate whose methods ran: the paired difference (tested - reference, per seed; the
    reference is the best of its methods per seed), its 95% t interval, and the same gate with
    the untrained control as the tested method."""
    out = []
    for cid, statement, paper, (method, key), (refs, ref_key), margin, unit in GATES:
        if method not in metrics or any(r not in metrics for r in refs):
            continue
        ref = np.max([metrics[r][ref_key]["values"] for r in refs], axis=0)
        tested = np.asarray(metrics[method][key]["values"])
        iv = paired_interval(list(tested), list(ref))
        entry = claim(
            cid,
            statement,
            paper,
            f"{tested.mean():.2f} vs {ref.mean():.2f}: difference {_fmt(iv, unit)}",
            beats(iv, margin),
        )
        entry.update(difference=iv, margin=margin, reference=list(refs))
        if CONTROL in metrics and key in metrics[CONTROL]:
            civ = paired_interval(list(metrics[CONTROL][key]["values"]), list(ref))
            entry["control"] = {"method": CONTROL, **civ, "holds": beats(civ, margin)}
        out.append(entry)
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


PLOTTED = ("rot_acc15", "rank_rot_acc15", "rot_acc30", "centre_err", "psnr", "ssim")


def plot(metrics: dict) -> bytes:
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
    return figure_png(fig)


def seed_rows(cfg: Config) -> dict[str, dict[str, float]]:
    """Metrics of every floor, the untrained control and every method for cfg.seed."""
    prep = prepare(cfg)
    rows = {name: floor(prep) for name, floor in FLOORS.items()}
    torch.manual_seed(cfg.seed)
    rows[CONTROL] = eval_ar(cfg, prep, build_model(cfg, prep.vocab).eval(), "gst")
    for name in cfg.methods:
        workdir = Path(cfg.out) / f"seed{cfg.seed}" / name
        rows[name] = train_and_evaluate(cfg, workdir, name)
    return rows


def run_bench(cfg: Config) -> dict:
    """Every seed's rows, then <results-dir>/<preset>.json and figures/<preset>_metrics.png
    written together (results_dir_of: runs/<preset> unless --results-dir is given)."""
    validate(cfg)
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    torch.set_num_threads(cfg.threads)
    start, cpu_start = time.perf_counter(), time.process_time()
    per_method: dict[str, dict[str, list[float]]] = {}
    for seed in cfg.seeds:
        for name, row in seed_rows(dataclasses.replace(cfg, seed=seed)).items():
            for key, value in row.items():
                per_method.setdefault(name, {}).setdefault(key, []).append(value)
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
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
    doc["config"] = {
        k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(cfg).items()
    }
    doc["steps_per_method"] = {m: steps_for(cfg, m) for m in cfg.methods}
    doc["tuning"] = TUNING
    figures = {f"{cfg.name}_metrics.png": plot(metrics)}
    write_results(results_dir_of(cfg), cfg.name, doc, figures)
    return doc
