"""Benchmark of a preset: every arm over its seeds on the QM9 part (rdkit QM9-like data in quick,
real QM9 from qm9pack in paper) and, where the preset has it, the MD-like part; equal lr tuning
on a validation split; claims computed from the measured metrics with thresholds written here;
figures."""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import torch

from .config import Config, validate
from .results import (
    claim,
    paired_interval,
    part_from_paired,
    results_document,
    summarize,
    write_results,
)
from .runtime import resolve_device, results_dir_of
from .train import load_split, train_and_evaluate

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
    "median": "Median predictor (floor)",
}


def paired(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """Mean of a - b over the same seeds and its 95% t interval (lo, hi); (-inf, inf) from one
    seed (results.paired_interval)."""
    d = paired_interval(a, b)
    if d["lo"] is None:
        return d["mean"], -math.inf, math.inf
    return d["mean"], d["lo"], d["hi"]


def median_floor(cfg: Config) -> dict[str, float]:
    """Test MAE of predicting the training-set median label (the trivial floor)."""
    train, _, test, key, _, _ = load_split(cfg)
    labels = sorted(m.y[key] for m in train)
    med = labels[len(labels) // 2]
    return {"mae": sum(abs(m.y[key] - med) for m in test) / len(test)}


TOLERANCE = 1.05  # quick gate: EMPP at most 5% worse than supervised-only
WIDE_MARGIN = 0.7  # the backbone must reach <= 70% of the median floor's MAE to count as learning


AUX_ARMS = ("empp", "empp_nolabel", "denoise", "element_mask")  # arms with an aux_weight


def tune_lr(cfg: Config, task: str, arm: str) -> tuple[Config, dict | None, dict | None]:
    """Equal tuning on the first seed, lowest validation MAE wins: every arm tries the same
    cfg.lr_grid (at cfg.aux_weight); then arms with an auxiliary loss also try each weight of
    cfg.aux_grid at the chosen lr (the paper tunes that weight). Returns (the chosen config,
    that run's metrics, the tuning record); without a grid or a validation split (MD), cfg."""
    if not cfg.lr_grid or cfg.n_val < 1 or task != "qm9":
        return cfg, None, None
    seed = cfg.seeds[0]
    base = dataclasses.replace(cfg, seed=seed, task=task, method=arm)

    def run(c: Config, tag: str) -> dict:
        return train_and_evaluate(c, Path(cfg.out) / task / arm / tag / f"seed{seed}")

    tried = [run(dataclasses.replace(base, lr=lr), f"lr{lr:g}") for lr in cfg.lr_grid]
    best = min(range(len(tried)), key=lambda i: tried[i]["val_mae"])
    chosen, first = dataclasses.replace(cfg, lr=cfg.lr_grid[best]), tried[best]
    record: dict = {
        "grid": list(cfg.lr_grid),
        "val_mae": [round(t["val_mae"], 5) for t in tried],
        "chosen_lr": chosen.lr,
        "tuned_on_seed": seed,
    }
    weights = [w for w in cfg.aux_grid if w != cfg.aux_weight]
    if arm in AUX_ARMS and weights:
        record["aux_grid"] = [cfg.aux_weight, *weights]
        record["aux_val_mae"] = [record["val_mae"][best]]
        for w in weights:
            c = dataclasses.replace(base, lr=chosen.lr, aux_weight=w)
            result = run(c, f"lr{chosen.lr:g}_aux{w:g}")
            record["aux_val_mae"].append(round(result["val_mae"], 5))
            if result["val_mae"] < first["val_mae"]:
                chosen, first = dataclasses.replace(chosen, aux_weight=w), result
        record["chosen_aux_weight"] = chosen.aux_weight
    return chosen, first, record


def run_arms(cfg: Config) -> tuple[dict[str, dict[str, list[float]]], dict]:
    """(metrics[arm]['<task>_<metric>'] = values over seeds, lr tuning record per task/arm)."""
    runs: dict[str, dict[str, list[float]]] = {}
    tuning: dict = {}
    for task in cfg.tasks:
        for arm in ARMS[task]:
            tuned, first, record = tune_lr(cfg, task, arm)
            if record:
                tuning[f"{task}/{arm}"] = record
            for seed in cfg.seeds:
                if first is not None and seed == cfg.seeds[0]:
                    result = first  # the tuning run of the chosen settings is this seed's run
                else:
                    run_cfg = dataclasses.replace(tuned, seed=seed, task=task, method=arm)
                    workdir = Path(cfg.out) / task / arm / f"seed{seed}"
                    result = train_and_evaluate(run_cfg, workdir)
                for key, value in result.items():
                    runs.setdefault(LABELS[arm], {}).setdefault(f"{task}_{key}", []).append(value)
        for seed in cfg.seeds:
            floor = median_floor(dataclasses.replace(cfg, seed=seed, task=task))
            runs.setdefault(LABELS["median"], {}).setdefault(f"{task}_mae", []).append(floor["mae"])
    return runs, tuning


def label_unit(cfg: Config) -> str:
    """Unit of the QM9(-like) label: eV for the gap (EHT or DFT) and real-QM9 U0, kcal/mol for
    the MMFF energy, Debye for the dipole."""
    if cfg.target == "mu":
        return "D"
    if cfg.target == "u0" and not (cfg.qm9_csv or cfg.qm9_dir):
        return "kcal/mol"
    return "eV"


def claims_from(m: dict, cfg: Config) -> list[dict]:
    """Every claim carries its structured test (results.part_from_paired over the paired seeds)
    and the three-way verdict that follows; thresholds come from the claims' statements."""

    def mean(arm: str, key: str) -> float:
        return m[LABELS[arm]][key]["mean"]

    def vals(arm: str, key: str) -> list[float]:
        return m[LABELS[arm]][key]["values"]

    strict = cfg.name != "quick"
    world = "QM9 (DFT, qm9pack)" if cfg.qm9_csv else "QM9-like"
    unit = label_unit(cfg)

    def text(d: dict) -> str:
        lo = "-inf" if d["lo"] is None else f"{d['lo']:+.4f}"
        hi = "+inf" if d["hi"] is None else f"{d['hi']:+.4f}"
        return f"{d['mean']:+.4f} [95% CI {lo}, {hi}]"

    def gate(arm: str, key: str, base: str = "supervised", u: str = unit) -> tuple[dict, str]:
        """Paired over seeds, arm - base: the paper's "improves" is arm - base < 0 (strict
        presets); the quick gate tolerates arm - base < 5% of base's mean MAE."""
        d = paired_interval(vals(arm, key), vals(base, key))
        threshold = 0.0 if strict else (TOLERANCE - 1) * mean(base, key)
        p = part_from_paired(f"{LABELS[arm]} - {LABELS[base]} test {key}", d, threshold, "<", u)
        return p, f"paired {arm} - {base} {text(d)}, threshold {threshold:.4f}"

    emp, sup = mean("empp", "qm9_mae"), mean("supervised", "qm9_mae")
    pre, den = mean("empp_pretrain", "qm9_mae"), mean("denoise", "qm9_mae")
    sch, med = mean("schnet", "qm9_mae"), mean("median", "qm9_mae")
    pos, cen = mean("empp", "qm9_pos_error"), mean("empp", "qm9_centroid_error")
    rule = (
        "< {base} (paired 95% interval of the difference entirely below 0)"
        if strict
        else "<= 1.05 x {base} (paired 95% interval entirely below 5% of {base}; quick gate)"
    )
    p_emp, t_emp = gate("empp", "qm9_mae")
    p_pre, t_pre = gate("empp_pretrain", "qm9_mae")
    p_den, t_den = gate("empp", "qm9_mae", "denoise")
    p_med, t_med = gate("median", "qm9_mae")
    wide = [WIDE_MARGIN * v for v in vals("median", "qm9_mae")]
    d_f = paired_interval(vals("supervised", "qm9_mae"), wide)
    p_floor = part_from_paired(
        f"supervised - {WIDE_MARGIN} x median-floor test MAE", d_f, 0.0, "<", unit
    )
    d_s = paired_interval(vals("supervised", "qm9_mae"), vals("schnet", "qm9_mae"))
    p_sch = part_from_paired("supervised - SchNet test MAE", d_s, 0.25 * sch, "<", unit)
    d_p = paired_interval(vals("empp", "qm9_pos_error"), vals("empp", "qm9_centroid_error"))
    p_pos = part_from_paired("head position error - neighbour-centroid error", d_p, 0.0, "<", "A")
    params = {a: mean(a, "qm9_params") for a in ("supervised", "schnet")}
    out = [
        claim(
            "empp-not-worse-than-supervised",
            f"{world} {cfg.target} test MAE: EMPP auxiliary loss " + rule.format(base="supervised"),
            "EMPP improves Equiformer on the QM9 targets (paper, QM9 table; Equiformer's gap "
            "MAE is about 30 meV; EMPP's own value not verified here)",
            f"EMPP {emp:.4f} vs supervised {sup:.4f} (denoising {den:.4f}, median floor "
            f"{med:.4f}); {t_emp}",
            test=[p_emp],
        ),
        claim(
            "empp-pretraining-not-worse",
            f"{world} {cfg.target} test MAE: EMPP pre-training ({cfg.pretrain_epochs} epochs, "
            f"no label, {cfg.n_pretrain} extra unlabelled molecules) then fine-tuning "
            + rule.format(base="supervised"),
            "EMPP pre-training beats other pre-training methods on QM9 (paper; values unverified)",
            f"pre-train + fine-tune {pre:.4f} vs supervised {sup:.4f}; {t_pre}",
            test=[p_pre],
        ),
        claim(
            "empp-vs-denoising",
            f"{world} {cfg.target} test MAE: EMPP auxiliary loss " + rule.format(base="denoising"),
            "EMPP surpasses denoising-based self-supervision (paper; values unverified)",
            f"EMPP {emp:.4f} vs denoising {den:.4f}; {t_den}",
            test=[p_den],
        ),
        claim(
            "backbone-beats-median-floor",
            f"{world} {cfg.target}: the supervised backbone beats the training-median predictor "
            f"by a wide margin (paired 95% interval of supervised - {WIDE_MARGIN} x median "
            "entirely below 0); without this the EMPP claims cannot test the paper",
            "Equiformer is far below the mean predictor on QM9 (paper's setting)",
            f"supervised {sup:.4f} vs median {med:.4f} (ratio {sup / med:.2f}); paired "
            f"supervised - {WIDE_MARGIN} x median {text(d_f)}",
            test=[p_floor],
        ),
        claim(
            "backbone-comparable-to-schnet",
            f"{world} {cfg.target}: our equivariant backbone is within 25% of PyG SchNet of "
            "comparable size trained the same way (paired 95% interval of supervised - "
            "schnet entirely below 0.25 x schnet); a check of the backbone, not of the paper",
            "Equiformer beats SchNet on QM9 (Equiformer paper; recalled, unverified)",
            f"supervised {sup:.4f} ({params['supervised']:.0f} parameters) vs SchNet {sch:.4f} "
            f"({params['schnet']:.0f}); paired {text(d_s)}, threshold {0.25 * sch:.4f}",
            test=[p_sch],
        ),
        claim(
            "negative-control-median-passes-gate",
            "NEGATIVE CONTROL (must not hold; expected verdict contradicted): the median predictor "
            "passes the same paired gate against supervised as the EMPP claims",
            "a gate that a trivial predictor passes would test nothing",
            f"median {med:.4f} vs supervised {sup:.4f}; {t_med}",
            test=[p_med],
            role="control",
        ),
        claim(
            "empp-head-reconstructs-position",
            "the EMPP head's reconstructed masked position (test set, Angstrom) is closer than "
            "the centroid of the neighbours used to predict it (paired 95% interval of the "
            "difference entirely below 0)",
            "not reported as a number in the paper",
            f"head {pos:.3f} A vs neighbour centroid {cen:.3f} A; paired {text(d_p)}",
            test=[p_pos],
        ),
    ]
    if "md" in cfg.tasks:
        out += md_claims(m, cfg, rule.format(base="supervised"), gate, text)
    return out


def md_claims(m: dict, cfg: Config, rule: str, gate, text) -> list[dict]:
    """Force MAE on the MD-like trajectory: EMPP against supervised, and the label ablation."""
    f = {arm: m[LABELS[arm]]["md_force_mae"]["mean"] for arm in ARMS["md"]}
    p_force, t_force = gate("empp", "md_force_mae", u="kcal/mol/A")
    d_l = paired_interval(
        m[LABELS["empp"]]["md_force_mae"]["values"],
        m[LABELS["empp_nolabel"]]["md_force_mae"]["values"],
    )
    p_label = part_from_paired("EMPP - EMPP (no label) force MAE", d_l, 0.0, "<", "kcal/mol/A")
    return [
        claim(
            "empp-forces-not-worse",
            f"MD-like ({cfg.md_molecule}, MMFF94 500 K) force MAE: EMPP " + rule,
            "EMPP lowers Equiformer's MD17 force MAE modestly (paper, MD17 table; unverified here)",
            ", ".join(f"{LABELS[a]} {v:.3f}" for a, v in f.items()) + f" kcal/mol/A; {t_force}",
            test=[p_force],
        ),
        claim(
            "label-conditioning-helps-md",
            "on non-equilibrium MD frames, label-conditioned EMPP reaches a lower force MAE "
            "than EMPP without the label (paired 95% interval of the difference entirely below 0)",
            "label conditioning makes the masked position well defined off equilibrium "
            "(paper, method section)",
            f"{f['empp']:.3f} vs {f['empp_nolabel']:.3f} kcal/mol/A; "
            f"paired empp - empp_nolabel {text(d_l)}",
            test=[p_label],
        ),
    ]


def performance_from(m: dict, cfg: Config) -> list[dict]:
    """Seconds per 1,000 training molecules (QM9 part), EMPP vs supervised and vs SchNet."""
    world = "QM9 (DFT, with H)" if cfg.qm9_csv else "QM9-like"

    def sec(arm: str) -> float:
        return 1000.0 / m[LABELS[arm]]["qm9_train_mol_per_s"]["mean"]

    out = []
    for pid, peer, what in (
        ("empp-overhead", "supervised", "same network without the EMPP head"),
        ("empp-vs-schnet", "schnet", f"PyG SchNet (3 interactions, {cfg.schnet_hidden} channels)"),
    ):
        out.append(
            {
                "id": pid,
                "what": f"training time per 1,000 {world} molecules (1 CPU thread)",
                "ours_s": round(sec("empp"), 3),
                "peer": what,
                "peer_s": round(sec(peer), 3),
                "ratio": round(sec("empp") / sec(peer), 2),
            }
        )
    return out


def figures(m: dict, cfg: Config) -> dict:
    """File name -> figure (written with the JSON by results.write_results)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    world = "QM9 (DFT)" if cfg.qm9_csv else "QM9-like"
    panels = [
        ("qm9", "qm9_mae", f"{world} {cfg.target} test MAE"),
        ("md", "md_force_mae", "MD-like force MAE (kcal/mol/A)"),
        ("qm9", "qm9_train_mol_per_s", f"training molecules / s ({world})"),
    ]
    panels = [p for p in panels if p[0] in cfg.tasks]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (task, key, title) in zip(axes[0], panels):
        names = [LABELS[a] for a in ARMS[task]]
        ax.bar(names, [m[n][key]["mean"] for n in names], yerr=[m[n][key]["std"] for n in names])
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=30)
    return {"arms.png" if cfg.name == "quick" else f"arms_{cfg.name}.png": fig}


def run_bench(cfg: Config) -> dict:
    """Every arm over the seeds; the JSON and its figure are written together at the end into
    results_dir_of(cfg) (--results-dir, else runs/<preset>)."""
    validate(cfg)
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    torch.set_num_threads(cfg.threads)
    start, cpu_start = time.perf_counter(), time.process_time()
    runs, tuning = run_arms(cfg)
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
        performance_from(metrics, cfg),
    )
    doc["lr_tuning"] = tuning or {
        "grid": [cfg.lr],
        "note": "no tuning in this preset: every arm uses the same lr (no validation split)",
    }
    doc["cpu_seconds"] = round(time.process_time() - cpu_start, 1)  # wall on a dedicated core
    write_results(results_dir_of(cfg), cfg.name, doc, figures(metrics, cfg))
    return doc
