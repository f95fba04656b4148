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
    part_from_paired,
    results_document,
    summarize,
    write_results,
)
from .runtime import resolve_device, results_dir_of
from .train import build_model, eval_ar, prepare, steps_for, train_and_evaluate

PAPER = "gst"
POSE_MARGIN = 3.0
"""The localisation precondition: the pose-only model must be at least this many points of
rotation accuracy within 15 deg above the image-blind chance floor (a few test pairs of 128 move
the rate by ~0.8 points each, so less is not "localisation is learned")."""
PAPER_TABLE4 = "Table 4 (CO3D): joint training beats separately trained pose / NVS models"
CONTROL = "untrained"
"""Negative control: the joint model's architecture at initialisation, evaluated like the
others; every claim is recomputed with it in place of the tested model and must not hold."""
TUNING = (
    "none for any method: every model uses the preset's lr, batch, warm-up and sampling "
    "(top-k, temperature); steps equal per task order"
)


@dataclasses.dataclass(frozen=True)
class Gate:
    """One claim: tested - reference (the best of `refs` per seed), paired over seeds, must lie
    `direction` `threshold` (the three-way verdict of results.part_verdict)."""

    cid: str
    statement: str
    paper: str
    method: str
    key: str
    refs: tuple[str, ...]
    ref_key: str
    threshold: float
    direction: str
    unit: str
    log: bool = False
    """Compare log(metric) (perplexities: the difference of cross-entropies in nats)."""
    precondition: str = ""
    """The gate this comparison is read under (results.gate): the compared models learned the
    task at all. Perplexity gates have none (a likelihood is comparable at any skill)."""


# The paper's Table 4 claim is "joint training improves both tasks": its threshold is 0 (no
# effect size is stated). The two preconditions say the compared models learned the task at all.
GATES = [
    Gate(
        "joint-pose-beats-pose-only",
        "the alternating joint GST's rotation accuracy within 15 deg (sampled, EST order) is above "
        "the pose-only model's, paired over seeds",
        PAPER_TABLE4 + " on rotation accuracy @15/@30 deg",
        "gst",
        "rot_acc15",
        ("pose_only",),
        "rot_acc15",
        0.0,
        ">",
        "points",
        precondition="ar-pose-beats-chance",
    ),
    Gate(
        "joint-nvs-beats-nvs-only",
        "the alternating joint GST's novel-view PSNR is above the NVS-only model's, paired over "
        "seeds",
        PAPER_TABLE4 + " (view synthesis side of the joint distribution)",
        "gst",
        "psnr",
        ("nvs_only",),
        "psnr",
        0.0,
        ">",
        "dB",
        precondition="ar-nvs-beats-floors",
    ),
    Gate(
        "gen-joint-pose-beats-pose-only",
        "the GEN-only joint GST's rotation accuracy within 15 deg (likelihood ranking of candidate "
        "cameras) is above the pose-only model's (same ranking), paired over seeds",
        PAPER_TABLE4 + "; the official sampler uses the GEN order only",
        "gst_gen",
        "rank_rot_acc15",
        ("pose_only",),
        "rank_rot_acc15",
        0.0,
        ">",
        "points",
        precondition="ar-pose-beats-chance",
    ),
    Gate(
        "gen-joint-nvs-beats-nvs-only",
        "the GEN-only joint GST's novel-view PSNR is above the NVS-only model's, paired over seeds",
        PAPER_TABLE4 + "; the official sampler uses the GEN order only",
        "gst_gen",
        "psnr",
        ("nvs_only",),
        "psnr",
        0.0,
        ">",
        "dB",
        precondition="ar-nvs-beats-floors",
    ),
    Gate(
        "gen-joint-image-ppl-below-nvs-only",
        "the GEN-only joint GST's test perplexity of the target-image segment p(i | o, c) is below "
        "the NVS-only model's at the same steps (log-perplexity difference < 0, paired over seeds)",
        PAPER_TABLE4 + " (likelihood form: the joint model fits p(i | o, c) better)",
        "gst_gen",
        "ppl_image",
        ("nvs_only",),
        "ppl_image",
        0.0,
        "<",
        "nats",
        log=True,
    ),
    Gate(
        "joint-camera-ppl-below-pose-only",
        "the alternating joint GST's test perplexity of the camera segment p(c | o, i) (EST order) "
        "is below the pose-only model's (log-perplexity difference < 0, paired over seeds)",
        PAPER_TABLE4 + " (likelihood form: the joint model fits p(c | o, i) better)",
        "gst",
        "ppl_camera",
        ("pose_only",),
        "ppl_camera",
        0.0,
        "<",
        "nats",
        log=True,
    ),
    Gate(
        "ar-nvs-beats-floors",
        "the NVS-only model's PSNR is above the better trivial floor of each seed (mean training "
        "image, nearest training view), paired over seeds",
        "view synthesis is learned (precondition of the Table 4 comparison)",
        "nvs_only",
        "psnr",
        ("mean_image", "nearest_view"),
        "psnr",
        0.0,
        ">",
        "dB",
    ),
    Gate(
        "ar-pose-beats-chance",
        f"the pose-only model's rotation accuracy within 15 deg (sampled) is more than "
        f"{POSE_MARGIN:g} points above the image-blind chance floor, paired over seeds",
        "localisation is learned (precondition of the Table 4 comparison)",
        "pose_only",
        "rot_acc15",
        ("chance_pose",),
        "rot_acc15",
        POSE_MARGIN,
        ">",
        "points",
    ),
]


def _fmt(iv: dict, unit: str) -> str:
    if iv["lo"] is None:
        return f"{iv['mean']:+.2f} {unit} (one seed: no interval)"
    return f"{iv['mean']:+.2f} {unit} [{iv['lo']:+.2f}, {iv['hi']:+.2f}]"


def _values(metrics: dict, method: str, key: str, log: bool) -> np.ndarray:
    v = np.asarray(metrics[method][key]["values"], dtype=float)
    return np.log(v) if log else v


def gate_claim(
    gate: Gate, metrics: dict, method: str | None = None, read_under: bool = False
) -> dict:
    """The gate's claim with `method` (default: the gate's own) as the tested model;
    `read_under`: carry the gate's precondition (its claim is in the same file)."""
    method = method or gate.method
    ref = np.max([_values(metrics, r, gate.ref_key, gate.log) for r in gate.refs], axis=0)
    tested = _values(metrics, method, gate.key, gate.log)
    iv = paired_interval(list(tested), list(ref))
    what = f"{method} - {'/'.join(gate.refs)} {'log ' if gate.log else ''}{gate.key}"
    shown = [np.mean(metrics[method][gate.key]["values"])]
    shown.append(np.max([metrics[r][gate.ref_key]["values"] for r in gate.refs], axis=0).mean())
    ours = f"{shown[0]:.2f} vs {shown[1]:.2f} ({gate.key}): difference {_fmt(iv, gate.unit)}"
    entry = claim(
        gate.cid,
        gate.statement,
        gate.paper,
        ours,
        test=[part_from_paired(what, iv, gate.threshold, gate.direction, gate.unit)],
    )
    entry.update(difference=iv, reference=list(gate.refs))
    if read_under and gate.precondition:
        entry["precondition"] = gate.precondition
    return entry


def claims_from(metrics: dict) -> list[dict]:
    """Every gate whose methods ran, with its three-way verdict, read under its precondition
    where that gate ran too (the accuracy and PSNR comparisons only where the compared models
    beat their floors; results.gate leaves them unread otherwise); then, for each, the negative
    control: the same gate with the untrained model in place of the tested one, a claim of its
    own whose statement says it must not hold."""

    def runs(gate: Gate) -> bool:
        return gate.key in metrics.get(gate.method, {}) and all(
            gate.ref_key in metrics.get(r, {}) for r in gate.refs
        )

    ran = {gate.cid for gate in GATES if runs(gate)}
    out, controls = [], []
    for gate in GATES:
        if gate.cid not in ran:
            continue
        out.append(gate_claim(gate, metrics, read_under=gate.precondition in ran))
        if CONTROL in metrics and gate.key in metrics[CONTROL]:
            c = gate_claim(gate, metrics, CONTROL)
            c["id"] = f"control-{gate.cid}"
            c["statement"] = (
                f"negative control (must not hold): {gate.cid} with the untrained model in "
                f"place of {gate.method}"
            )
            c["paper"] = "negative control: an untrained model must not pass the gate"
            c["role"], c["control_for"] = "control", gate.cid
            controls.append(c)
    return out + controls


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
