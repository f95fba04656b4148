"""Quick benchmark: every arm over the preset's seeds on the QM9-like and the MD-like data;
claims computed from the measured metrics with thresholds written here; figures."""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

from .config import Config
from .results import atomic_write_json, claim, results_document, save_figure, summarize
from .train import train_and_evaluate

PAPER = "empp"
ARMS = {
    "qm9": ("supervised", "empp", "empp_pretrain", "denoise", "element_mask", "schnet"),
    "md": ("supervised", "empp", "empp_nolabel", "denoise", "schnet"),
}
LABELS = {
    "supervised": "Supervised only",
    "empp": "EMPP",
    "empp_nolabel": "EMPP (no label)",
    "empp_pretrain": "EMPP pre-train + fine-tune",
    "denoise": "Coordinate denoising",
    "element_mask": "Element masking",
    "schnet": "SchNet (PyG)",
}
TOLERANCE = 1.05  # quick gate: EMPP at most 5% worse than supervised-only


def run_arms(cfg: Config) -> dict[str, dict[str, list[float]]]:
    """metrics[arm]['<task>_<metric>'] = values over seeds."""
    runs: dict[str, dict[str, list[float]]] = {}
    for seed in cfg.seeds:
        for task, arms in ARMS.items():
            for arm in arms:
                run_cfg = dataclasses.replace(cfg, seed=seed, task=task, method=arm)
                workdir = Path(cfg.out) / task / arm / f"seed{seed}"
                for key, value in train_and_evaluate(run_cfg, workdir).items():
                    runs.setdefault(LABELS[arm], {}).setdefault(f"{task}_{key}", []).append(value)
    return runs


def claims_from(m: dict, cfg: Config) -> list[dict]:
    def mean(arm: str, key: str) -> float:
        return m[LABELS[arm]][key]["mean"]

    emp, sup = mean("empp", "qm9_mae"), mean("supervised", "qm9_mae")
    pre = mean("empp_pretrain", "qm9_mae")
    den = mean("denoise", "qm9_mae")
    pos, cen = mean("empp", "qm9_pos_error"), mean("empp", "qm9_centroid_error")
    f = {arm: mean(arm, "md_force_mae") for arm in ARMS["md"]}
    full = cfg.name == "full"
    gate = emp < sup if full else emp <= TOLERANCE * sup
    return [
        claim(
            "empp-not-worse-than-supervised",
            f"QM9-like {cfg.target} test MAE: EMPP auxiliary loss "
            + ("< supervised-only (full)" if full else "<= 1.05 x supervised-only (quick gate)"),
            "EMPP improves Equiformer on the QM9 targets (paper, QM9 table; Equiformer's gap "
            "MAE is about 30 meV; EMPP's own value not verified here)",
            f"EMPP {emp:.4f} vs supervised {sup:.4f} eV (denoising {den:.4f})",
            gate,
        ),
        claim(
            "empp-pretraining-not-worse",
            f"QM9-like {cfg.target} test MAE: EMPP pre-training ({cfg.pretrain_epochs} epochs, "
            f"no label, {cfg.n_pretrain} extra unlabelled molecules) then fine-tuning "
            + ("< supervised-only (full)" if full else "<= 1.05 x supervised-only (quick gate)"),
            "EMPP pre-training beats other pre-training methods on QM9 (paper; values unverified)",
            f"pre-train + fine-tune {pre:.4f} vs supervised {sup:.4f} eV",
            pre < sup if full else pre <= TOLERANCE * sup,
        ),
        claim(
            "empp-head-reconstructs-position",
            "the EMPP head's reconstructed masked position (test set, Angstrom) is closer than "
            "the centroid of the neighbours used to predict it",
            "not reported as a number in the paper",
            f"head {pos:.3f} A vs neighbour centroid {cen:.3f} A",
            pos < cen,
        ),
        claim(
            "empp-forces-not-worse",
            f"MD-like ({cfg.md_molecule}, MMFF94 500 K) force MAE: EMPP <= 1.05 x supervised",
            "EMPP lowers Equiformer's MD17 force MAE modestly (paper, MD17 table; unverified here)",
            ", ".join(f"{LABELS[a]} {v:.3f}" for a, v in f.items()) + " kcal/mol/A",
            f["empp"] <= TOLERANCE * f["supervised"],
        ),
        claim(
            "label-conditioning-helps-md",
            "on non-equilibrium MD frames, label-conditioned EMPP reaches a lower force MAE "
            "than EMPP without the label",
            "label conditioning makes the masked position well defined off equilibrium (paper, method section)",
            f"{f['empp']:.3f} vs {f['empp_nolabel']:.3f} kcal/mol/A",
            f["empp"] < f["empp_nolabel"],
        ),
    ]


def performance_from(m: dict) -> list[dict]:
    """Seconds per 1,000 training molecules (QM9-like), EMPP vs supervised and vs SchNet."""

    def sec(arm: str) -> float:
        return 1000.0 / m[LABELS[arm]]["qm9_train_mol_per_s"]["mean"]

    out = []
    for pid, peer, what in (
        ("empp-overhead", "supervised", "same network without the EMPP head"),
        ("empp-vs-schnet", "schnet", "PyG SchNet (3 interactions, 32 channels)"),
    ):
        out.append(
            {
                "id": pid,
                "what": "training time per 1,000 QM9-like molecules (1 CPU thread)",
                "ours_s": round(sec("empp"), 3),
                "peer": what,
                "peer_s": round(sec(peer), 3),
                "ratio": round(sec("empp") / sec(peer), 2),
            }
        )
    return out


def figures(m: dict, folder: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, (task, key, title) in zip(
        axes,
        (
            ("qm9", "qm9_mae", "QM9-like gap MAE (eV)"),
            ("md", "md_force_mae", "MD-like force MAE (kcal/mol/A)"),
            ("qm9", "qm9_train_mol_per_s", "training molecules / s (QM9-like)"),
        ),
    ):
        names = [LABELS[a] for a in ARMS[task]]
        ax.bar(names, [m[n][key]["mean"] for n in names], yerr=[m[n][key]["std"] for n in names])
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=30)
    save_figure(fig, folder / "arms.png")
    plt.close(fig)


def run_bench(cfg: Config) -> dict:
    start = time.perf_counter()
    runs = run_arms(cfg)
    metrics = {arm: {k: summarize(v) for k, v in d.items()} for arm, d in runs.items()}
    bad = [
        f"{a}/{k}" for a, d in metrics.items() for k, s in d.items() if not math.isfinite(s["mean"])
    ]
    if bad:
        raise ValueError(f"non-finite metrics: {bad}")
    claims = claims_from(metrics, cfg)
    doc = results_document(
        PAPER,
        cfg.name,
        list(cfg.seeds),
        metrics,
        claims,
        time.perf_counter() - start,
        cfg.device,
        performance_from(metrics),
    )
    results = Path(cfg.results_dir)
    figures(metrics, results / "figures")
    atomic_write_json(results / f"{cfg.name}.json", doc)
    return doc
