"""Quick benchmark: train and analyse one model per seed, compute the claims from the metrics."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import itertools

import matplotlib.pyplot as plt

from .config import OPERATORS, Config, validate
from .results import atomic_write_json, claim, results_document, save_figure, summarize
from .train import train_and_evaluate

PAPER = "arith-heuristics"
FAITHFUL = 0.8
"""Gate: faithfulness of the top neurons must reach this (paper: 0.90-0.98 for the circuit)."""
MAX_KEPT = 0.1
"""Gate: ... with at most this share of late-layer neurons kept."""
CLASSIFIED = 0.5
"""Gate: at least this share of the top neurons is classified into heuristics."""


def claims_from(metrics: dict, cfg: Config) -> list[dict]:
    def m(key: str) -> float:
        return metrics["BagOfHeuristics"][key]["mean"]

    def m_random(key: str) -> float:
        entry = metrics.get("RandomNeurons", {}).get(key)
        return entry["mean"] if entry else float("nan")

    ok_fracs = [i for i, f in enumerate(cfg.faith_fracs) if f <= MAX_KEPT]
    best = max(ok_fracs, key=lambda i: m(f"faith_curve_{i}")) if ok_fracs else None
    faith = m(f"faith_curve_{best}") if best is not None else float("nan")
    guided = [m(f"guided_acc_{i}") for i in range(len(cfg.knockout_counts))]
    rand = [m(f"random_acc_{i}") for i in range(len(cfg.knockout_counts))]
    overlap = [
        m(f"overlap_ckpt_{i}")
        for i in range(cfg.n_checkpoints)
        if f"overlap_ckpt_{i}" in metrics["BagOfHeuristics"]
    ]
    assoc, other = m("knockout_assoc_acc"), m("knockout_unassoc_acc")
    return [
        claim(
            "faithful-sparse-neurons",
            f"keeping <= {MAX_KEPT:.0%} of late-layer neurons (rest mean-ablated) gives "
            f"faithfulness >= {FAITHFUL} (mean over operators and seeds)",
            "circuit faithfulness 0.97/0.98/0.90/0.96 (+ - x /), ~1.5% of neurons per layer",
            f"{faith:.3f} at {cfg.faith_fracs[best]:.0%} kept"
            if best is not None
            else "no share <= 10%",
            best is not None and faith >= FAITHFUL,
        ),
        claim(
            "top-neurons-classified",
            f"at least {CLASSIFIED:.0%} of the top neurons are classified into heuristics (t = {cfg.threshold})",
            "91% of the top neurons (Llama3-8B)",
            f"{m('classified_share'):.3f} (random maps: {m('random_map_classified_share'):.3f})",
            m("classified_share") >= CLASSIFIED,
        ),
        claim(
            "heuristic-knockout-targets-associated",
            "ablating a heuristic's neurons leaves lower accuracy on its associated prompts than on "
            "unassociated ones (mean over heuristics, operators, seeds)",
            "associated vs unassociated accuracy 0.56 vs 0.86 for + (0.64/0.88, 0.80/0.89, 0.78/0.91)",
            f"{assoc:.3f} vs {other:.3f}",
            assoc < other,
        ),
        claim(
            "prompt-knockout-below-random",
            "ablating a prompt's heuristic neurons lowers accuracy below ablating as many random "
            f"heuristic neurons, at every count {list(cfg.knockout_counts)} per layer",
            "prompt-guided knockout far below random ablation (Llama3-8B and 70B)",
            "guided "
            + ", ".join(f"{g:.2f}" for g in guided)
            + " vs random "
            + ", ".join(f"{r:.2f}" for r in rand),
            all(g < r for g, r in zip(guided, rand, strict=True)),
        ),
        claim(
            "checkpoint-overlap-rises",
            "overlap of each checkpoint's heuristic neurons with the final model's rises monotonically",
            "Pythia-6.9B: overlap with the final heuristics grows gradually over training",
            ", ".join(f"{o:.2f}" for o in overlap),
            all(b >= a for a, b in itertools.pairwise(overlap)),
        ),
    ]


def plot(metrics: dict, cfg: Config, path: Path) -> None:
    def m(key: str) -> float:
        return metrics["BagOfHeuristics"][key]["mean"]

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    axes[0].plot(
        [100 * f for f in cfg.faith_fracs],
        [m(f"faith_curve_{i}") for i in range(len(cfg.faith_fracs))],
        "o-",
    )
    axes[0].axhline(FAITHFUL, color="0.5", ls="--")
    axes[0].set(
        xscale="log",
        xlabel="% late-layer neurons kept",
        ylabel="faithfulness",
        title="Faithfulness",
    )
    counts = list(cfg.knockout_counts)
    axes[1].plot(
        counts, [m(f"guided_acc_{i}") for i in range(len(counts))], "o-", label="prompt heuristics"
    )
    axes[1].plot(counts, [m(f"random_acc_{i}") for i in range(len(counts))], "s--", label="random")
    axes[1].set(xlabel="neurons ablated per layer", ylabel="accuracy", title="Prompt knockout")
    axes[1].legend()
    ov = [k for k in metrics["BagOfHeuristics"] if k.startswith("overlap_ckpt_")]
    axes[2].plot(range(1, len(ov) + 1), [m(k) for k in ov], "o-")
    axes[2].set(xlabel="checkpoint", ylabel="overlap with final", title="Heuristics over training")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


BASELINE_KEYS = {
    "random_faithfulness_at_top_frac": "faithfulness_at_top_frac",
    "random_map_classified_share": "classified_share",
}
"""Metrics of the random baselines (random neurons, random activation maps, random knockouts),
renamed to the method's metric they compare with."""


def split_baseline(flat: dict) -> dict:
    """Method metrics under 'BagOfHeuristics', random-baseline metrics under 'RandomNeurons'."""
    base = {}
    for key, value in flat.items():
        stem, _, op = key.rpartition("_")
        if op not in OPERATORS:
            stem, op = key, ""
        suffix = f"_{op}" if op else ""
        if key.startswith("random_acc_"):
            base[key.replace("random_acc_", "guided_acc_")] = value
        elif stem in BASELINE_KEYS:
            base[BASELINE_KEYS[stem] + suffix] = value
    return {"BagOfHeuristics": flat, "RandomNeurons": base}


def run_bench(cfg: Config) -> dict:
    validate(cfg)
    start = time.perf_counter()
    per_seed: dict[str, list[float]] = {}
    for seed in cfg.seeds:
        run_cfg = dataclasses.replace(cfg, seed=seed)
        for key, value in train_and_evaluate(run_cfg, Path(cfg.out) / f"seed{seed}").items():
            per_seed.setdefault(key, []).append(value)
    metrics = split_baseline({k: summarize(v) for k, v in per_seed.items()})
    claims = claims_from(metrics, cfg)
    perf = performance(cfg)
    plot(metrics, cfg, Path(cfg.results_dir) / "figures" / f"{cfg.name}_analysis.png")
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


def performance(cfg: Config) -> list[dict]:
    """Prompts per second of exact neuron patching vs attribution patching on the last seed's
    model, and the correlation of their neuron scores (measured in the analysis)."""
    from .perf import time_patching

    res = time_patching(
        dataclasses.replace(cfg, seed=cfg.seeds[-1]), Path(cfg.out) / f"seed{cfg.seeds[-1]}"
    )
    return [
        {
            "id": "neuron-patching-throughput",
            "what": f"prompts/s scoring all late-layer neurons, {res['n_neurons']} neurons x "
            f"{res['n_prompts']} prompts, operator '+', CPU",
            "ours_s": res["attribution_s"],
            "peer": "exact activation patching (one neuron at a time)",
            "peer_s": res["exact_s"],
            "ratio": res["exact_s"] / res["attribution_s"],
            "exact_prompts_per_s": res["n_prompts"] / res["exact_s"],
            "attribution_prompts_per_s": res["n_prompts"] / res["attribution_s"],
            "score_correlation": res["corr"],
        }
    ]
