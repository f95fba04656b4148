"""Quick benchmark: every method over the preset's seeds, claims computed from the metrics."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from .config import METHODS, Config, validate
from .results import atomic_write_json, claim, results_document, save_figure, summarize
from .train import Stage, prepare, run_method

PAPER = "tpo"
NDCG_MARGIN = 0.02
"""'Clearly ahead' on NDCG: TPO's mean NDCG@N exceeds DPO's by at least this much."""
TAU_MARGIN = 0.1
"""'Clearly ahead' on Kendall tau: TPO's mean tau exceeds DPO's by at least this much."""


def claims_from(metrics: dict) -> list[dict]:
    def mean(method: str, key: str) -> float:
        return metrics[method][key]["mean"]

    acc = {k: (mean("tpo", k), mean("dpo", k)) for k in ("acc_id", "acc_ood")}
    rank = {k: (mean("tpo", k), mean("dpo", k)) for k in ("ndcg", "kendall_tau")}
    margin = (mean("tpo", "sibling_margin"), mean("tpo_plr", "sibling_margin"))
    return [
        claim(
            "tpo-accuracy-ge-dpo",
            "TPO's greedy accuracy is at least DPO's, in and out of distribution (mean of seeds)",
            "TPO > DPO on all 5 LLMs and 4 in-distribution math sets, and on OOD code/reasoning",
            "in-dist {:.3f} vs {:.3f}; out-of-dist {:.3f} vs {:.3f}".format(
                *acc["acc_id"], *acc["acc_ood"]
            ),
            all(t >= d for t, d in acc.values()),
        ),
        claim(
            "tpo-ranks-better-than-dpo",
            f"TPO is ahead of DPO on held-out trees by >= {NDCG_MARGIN} NDCG@N and "
            f">= {TAU_MARGIN} Kendall tau (implicit reward vs judge score)",
            "PLR learns the whole ranked list; DPO sees only one pair (no number reported)",
            "NDCG {:.3f} vs {:.3f}; tau {:.3f} vs {:.3f}".format(
                *rank["ndcg"], *rank["kendall_tau"]
            ),
            rank["ndcg"][0] - rank["ndcg"][1] >= NDCG_MARGIN
            and rank["kendall_tau"][0] - rank["kendall_tau"][1] >= TAU_MARGIN,
        ),
        claim(
            "asr-raises-sibling-margin",
            "adding ASR raises the reward margin between siblings that share a prefix (vs PLR only)",
            "ASR enlarges margins on shared sub-trajectories (ablation: TPO > TPO w/o ASR)",
            "{:.3f} vs {:.3f}".format(*margin),
            margin[0] > margin[1],
        ),
    ]


def performance(stage: Stage, cfg: Config) -> list[dict]:
    """Loss+backward of PLR at list size 2 vs trl's DPO loss on the same 16 gold/worst pairs."""
    from .perf import compare_with_trl, pair_batch

    trees = stage.heldout_trees[:16]
    best = [t.responses[max(range(len(t.scores)), key=t.scores.__getitem__)] for t in trees]
    worst = [t.responses[min(range(len(t.scores)), key=t.scores.__getitem__)] for t in trees]
    batch = pair_batch(stage.tok, [t.prompt for t in trees], best, worst)
    res = compare_with_trl(stage.sft, stage.tok, batch, cfg.beta, cfg.perf_repeats)
    return [
        {
            "id": "plr-n2-vs-trl-dpo",
            "what": f"loss+backward (policy and reference forward) on {len(trees)} preference "
            f"pairs, GPT-2 {cfg.n_layer}x{cfg.d_model}, CPU",
            "ours_s": res["ours_s"],
            "peer": "trl 1.16.0 DPOTrainer._compute_loss (sigmoid DPO)",
            "peer_s": res["peer_s"],
            "ratio": res["ours_s"] / res["peer_s"],
            "ours_loss": res["ours_loss"],
            "peer_loss": res["peer_loss"],
        }
    ]


LOSS_RTOL = 1e-5
"""PLR at list size 2 must equal trl's DPO loss to this relative tolerance (float32)."""


def plot(metrics: dict, path: Path) -> None:
    keys = ("acc_id", "acc_ood", "ndcg", "kendall_tau", "sibling_margin")
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3.2))
    for ax, key in zip(axes, keys, strict=True):
        means = [metrics[m][key]["mean"] for m in METHODS]
        stds = [metrics[m][key]["std"] for m in METHODS]
        ax.bar(METHODS, means, yerr=stds, color=["0.6", "C0", "C1", "C2", "C3"], capsize=3)
        ax.set_title(key)
        ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def run_bench(cfg: Config) -> dict:
    validate(cfg)
    start = time.perf_counter()
    per_method: dict[str, dict[str, list[float]]] = {m: {} for m in METHODS}
    for n, seed in enumerate(cfg.seeds):
        # one SFT policy (trained with the first seed) serves every seed: the seeds vary tree
        # sampling, preference training and test problems, and the methods compare paired
        run_cfg = dataclasses.replace(cfg, seed=seed, resume=cfg.resume or n > 0)
        stage = prepare(run_cfg, Path(cfg.out), sft_seed=cfg.seeds[0])
        for name in METHODS:
            workdir = Path(cfg.out) / f"seed{seed}" / name
            for key, value in run_method(stage, name, run_cfg, workdir).items():
                per_method[name].setdefault(key, []).append(value)
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    plot(metrics, Path(cfg.results_dir) / "figures" / f"{cfg.name}_metrics.png")
    claims = claims_from(metrics)
    perf = performance(stage, cfg) if cfg.perf_repeats else []
    for entry in perf:
        gap = abs(entry["ours_loss"] - entry["peer_loss"]) / abs(entry["peer_loss"])
        claims.append(
            claim(
                "plr-n2-equals-trl-dpo",
                f"PLR on a list of 2 equals trl's DPO loss (relative gap <= {LOSS_RTOL})",
                "with N = 2 the ranking loss reduces to DPO",
                f"{entry['ours_loss']:.6f} vs {entry['peer_loss']:.6f}",
                gap <= LOSS_RTOL,
            )
        )
    doc = results_document(
        PAPER,
        cfg.name,
        list(cfg.seeds),
        metrics,
        claims,
        time.perf_counter() - start,
        cfg.device,
        perf,
    )
    atomic_write_json(Path(cfg.results_dir) / f"{cfg.name}.json", doc)
    return doc
