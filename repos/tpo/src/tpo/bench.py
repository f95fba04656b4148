"""Benchmark: every method over the preset's seeds on the same trees and test problems, claims
computed from paired per-item differences with a bootstrap interval and a negative control."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from .config import Config, validate
from .evaluation import greedy_hits
from .hf import prepare_hf
from .results import (
    claim,
    paired_interval,
    part,
    part_from_paired,
    part_verdict,
    results_document,
    summarize,
    write_results,
)
from .runtime import results_dir_of
from .stats import paired_bootstrap
from .train import Stage, measure, prepare, summary, trained_policy

PAPER = "tpo"
CONTROL = "tpo_shuffled"
"""Negative control: TPO trained on scores shuffled within each tree; every claim's test, applied
to it in place of TPO, must fail for the claim to count as evidence."""
LOSS_RTOL = 1e-5
"""PLR at list size 2 must equal trl's DPO loss to this relative tolerance (float32)."""


def tune_betas(stage: Stage, cfg: Config, curves: dict) -> tuple[dict, dict]:
    """The same beta grid for every preference method on the first seed: the beta with the best
    validation accuracy wins (ties: the first). Returns the record and the trained policies;
    validation-accuracy curves go into curves[method][beta]."""
    if not cfg.beta_grid:
        record = {"grid": [cfg.beta], "chosen": {m: cfg.beta for m in cfg.methods}}
        return record | {"note": "no tuning: one beta for every method"}, {}
    chosen, val_acc, policies = {}, {}, {}
    for method in cfg.methods:
        if method == "sft":
            continue
        val_acc[method] = {}
        for beta in cfg.beta_grid:
            curve = curves.setdefault(method, {}).setdefault(str(beta), [])
            policy = trained_policy(stage, method, dataclasses.replace(cfg, beta=beta), curve)
            policies[method, beta] = policy
            val_acc[method][str(beta)] = float(greedy_hits(policy, stage.tok, stage.val).mean())
        chosen[method] = max(cfg.beta_grid, key=lambda b, m=method: val_acc[m][str(b)])
    record = {"grid": list(cfg.beta_grid), "n_val": cfg.n_val, "val_acc": val_acc}
    return record | {"chosen": chosen}, policies


def _interval(items: dict, a: str, b: str, key: str, n_boot: int) -> dict[str, float]:
    return paired_bootstrap(items[a][key], items[b][key], n_boot)


def _fmt(iv: dict[str, float]) -> str:
    return f"{iv['diff']:+.3f} [{iv['lo']:+.3f}, {iv['hi']:+.3f}]"


def _fmt_t(d: dict) -> str:
    lo, hi = d["lo"], d["hi"]
    span = "no interval" if lo is None else f"[{lo:+.3f}, {hi:+.3f}]"
    return f"{d['mean']:+.3f} {span} (n={d['n']} seeds)"


THRESHOLD = 0.0
"""Every claim is a direction the paper states without a margin (TPO above DPO, ASR above no
ASR), so each part tests the paired per-seed difference against 0."""


def paired_claim(
    per_seed: dict,
    items: dict,
    cid: str,
    statement: str,
    paper: str,
    method: str,
    baseline: str,
    key: str,
    n_boot: int,
    **extra: object,
) -> dict:
    """The verdict rests on the paired per-seed difference method - baseline (mean over each
    seed's items; 95% t interval over seeds): holds when it lies above THRESHOLD on >= 3 seeds.
    The item-level bootstrap (items resampled within seeds) and the same test on the negative
    control (CONTROL in place of method) are reported next to it."""
    diff = paired_interval(per_seed[method][key], per_seed[baseline][key])
    ctrl = paired_interval(per_seed[CONTROL][key], per_seed[baseline][key])
    pooled = _interval(items, method, baseline, key, n_boot)
    means = [float(np.mean(per_seed[m][key])) for m in (method, baseline)]
    ours = (
        f"{key} {means[0]:.3f} vs {means[1]:.3f}; paired per-seed diff {_fmt_t(diff)}; "
        f"items pooled {_fmt(pooled)} (n={pooled['n']}); control {CONTROL} - {baseline}: "
        f"{_fmt_t(ctrl)}"
    )
    part = part_from_paired(f"{method} - {baseline}, {key}", diff, THRESHOLD, ">", key)
    ctrl_part = part_from_paired(f"{CONTROL} - {baseline}, {key}", ctrl, THRESHOLD, ">", key)
    return claim(
        cid,
        statement + " (holds if the 95% t interval over seeds of the paired difference is above 0)",
        paper,
        ours,
        test=[part],
        pooled_items=pooled,
        control={"method": CONTROL, "test": ctrl_part, "verdict": part_verdict(ctrl_part)},
        **extra,
    )


CLAIMS = (
    (
        "tpo-accuracy-gt-dpo",
        "TPO's greedy accuracy on in-distribution test problems exceeds DPO's",
        (
            "TPO > DPO on all 5 LLMs and all 4 in-distribution math sets (MATH, SVAMP, ASDiv, "
            "GSM-Plus), gains of a few points"
        ),
        "tpo",
        "dpo",
        "acc_id",
    ),
    (
        "tpo-ood-accuracy-gt-dpo",
        "TPO's greedy accuracy on longer, out-of-distribution chains exceeds DPO's",
        "TPO > DPO out of distribution (HumanEval, MBPP, BBH, MMLU)",
        "tpo",
        "dpo",
        "acc_ood",
    ),
    (
        "tpo-ranks-better-than-dpo",
        (
            "TPO's implicit reward ranks held-out tree responses better than DPO's (per-tree "
            "NDCG@N against the judge scores)"
        ),
        "PLR learns the whole ranked list; DPO one pair (no number reported)",
        "tpo",
        "dpo",
        "ndcg",
    ),
    (
        "asr-raises-accuracy",
        "adding ASR to PLR raises in-distribution greedy accuracy (TPO vs TPO w/o ASR)",
        "ablation: TPO above TPO w/o ASR",
        "tpo",
        "tpo_plr",
        "acc_id",
    ),
    (
        "asr-raises-sibling-margin",
        "adding ASR raises the reward margin between held-out siblings that share a prefix",
        "ASR increases the relative reward margin on shared sub-trajectories (no number)",
        "tpo",
        "tpo_plr",
        "sibling_margin",
    ),
)


def control_claim(per_seed: dict, key: str) -> dict:
    """Negative control as a claim: TPO on shuffled scores must not beat DPO (expected verdict:
    contradicted, or at least not holds)."""
    diff = paired_interval(per_seed[CONTROL][key], per_seed["dpo"][key])
    return claim(
        f"control-shuffled-not-above-dpo-{key.replace('_', '-')}",
        f"negative control: TPO trained on scores shuffled within each tree beats DPO on {key} "
        "(must NOT hold; expected verdict contradicted)",
        "no paper number: a method that ignores the scores cannot learn the preference",
        f"{CONTROL} - dpo {key}: {_fmt_t(diff)}",
        test=[part_from_paired(f"{CONTROL} - dpo, {key}", diff, THRESHOLD, ">", key)],
        role="control",
    )


HEADROOM_ID = "sft-leaves-headroom"
HEADROOM_CEILING = 0.9
"""The SFT policy's in-distribution accuracy must lie below this for a preference method's gain
of a few points (the paper's effect size) to show: at 0.99 every method sits at the ceiling and
the accuracy claims compare noise."""
HEADROOM_LEARNERS = ("dpo", "tpo")
"""The preference-trained policies that must stay above chance (they learned, did not collapse)."""
ACCURACY_KEYS = ("acc_id", "acc_ood")


def _level(values: list[float]) -> dict:
    """Mean of one method's per-seed values with a 95% t interval over seeds (a one-sample
    interval: paired_interval against zeros)."""
    return paired_interval(list(values), [0.0] * len(values))


def _level_part(what: str, d: dict, threshold: float, direction: str) -> dict:
    interval = (d["lo"], d["hi"])
    return part(what, d["mean"], interval, threshold, direction, d["n"], "acc_id", "t over seeds")


def headroom_claim(per_seed: dict, chance: float) -> dict:
    """Precondition of the accuracy claims: SFT's in-distribution accuracy below HEADROOM_CEILING
    and DPO's and TPO's above chance (1 / modulus: a guessed answer), each on its t interval over
    seeds. Holds only when every part does; stated before the paper's claims."""
    sft = _level(per_seed["sft"]["acc_id"])
    parts = [_level_part("sft acc_id (ceiling)", sft, HEADROOM_CEILING, "<")]
    learned = {m: _level(per_seed[m]["acc_id"]) for m in HEADROOM_LEARNERS}
    parts += [
        _level_part(f"{m} acc_id (floor: chance)", d, chance, ">") for m, d in learned.items()
    ]
    ours = "; ".join(
        f"{m} acc_id {d['mean']:.3f} {_span(d)}" for m, d in {"sft": sft, **learned}.items()
    )
    return claim(
        HEADROOM_ID,
        "precondition of the accuracy claims: the SFT policy leaves headroom (in-distribution "
        f"accuracy below {HEADROOM_CEILING:g}) and the preference-trained policies (DPO, TPO) "
        f"learn, with accuracy above chance ({chance:.3f}); holds if every 95% t interval over "
        "seeds lies on its side",
        "not a claim of the paper: its SFT models are far from the ceiling on MATH/GSM-Plus, "
        "where gains of a few points over DPO are reported",
        ours,
        test=parts,
        precondition_of=[cid for cid, *_, key in CLAIMS if key in ACCURACY_KEYS],
    )


def _span(d: dict) -> str:
    return "(no interval)" if d["lo"] is None else f"[{d['lo']:.3f}, {d['hi']:.3f}]"


def claims_from(
    per_seed: dict, items: dict, n_boot: int, chance: float | None = None
) -> list[dict]:
    """The claims whose metric the run measured (a --model-dir run has no accuracy): first the
    headroom precondition (when accuracy was measured and `chance` is given), then the paper's
    claims (the accuracy ones name the precondition they are read under), then the control."""
    has_acc = all("acc_id" in per_seed.get(m, {}) for m in ("sft", *HEADROOM_LEARNERS))
    first = [headroom_claim(per_seed, chance)] if has_acc and chance is not None else []
    out = [
        paired_claim(
            per_seed,
            items,
            cid,
            st,
            paper,
            m,
            b,
            key,
            n_boot,
            **({"precondition": HEADROOM_ID} if first and key in ACCURACY_KEYS else {}),
        )
        for cid, st, paper, m, b, key in CLAIMS
        if key in per_seed[m]
    ]
    key = "acc_id" if "acc_id" in per_seed[CONTROL] else "ndcg"
    return [*first, *out, control_claim(per_seed, key)]


def performance(stage: Stage, cfg: Config) -> list[dict]:
    """Loss+backward of PLR at list size 2 vs trl's DPO loss on the same 16 gold/worst pairs."""
    from .perf import compare_with_trl, pair_batch

    trees = stage.heldout_trees[:16]
    best = [t.responses[max(range(len(t.scores)), key=t.scores.__getitem__)] for t in trees]
    worst = [t.responses[min(range(len(t.scores)), key=t.scores.__getitem__)] for t in trees]
    batch = pair_batch(stage.tok, [t.prompt for t in trees], best, worst)
    res = compare_with_trl(stage.sft, stage.tok, batch, cfg.beta, cfg.perf_repeats)
    gap = abs(res["ours_loss"] - res["peer_loss"]) / abs(res["peer_loss"])
    return [
        {
            "id": "plr-n2-vs-trl-dpo",
            "what": f"loss+backward (policy and reference forward) on {len(trees)} preference "
            f"pairs, GPT-2 {cfg.n_layer}x{cfg.d_model}, CPU; PLR at N = 2 and trl's DPO loss "
            f"agree to a relative gap of {gap:.1e} (tolerance {LOSS_RTOL})",
            "unit": "s",
            "higher_is_better": False,
            "ours_value": res["ours_s"],
            "peer": "trl 1.16.0 DPOTrainer._compute_loss (sigmoid DPO)",
            "peer_value": res["peer_s"],
            "ours_loss": res["ours_loss"],
            "peer_loss": res["peer_loss"],
            "loss_gap_ok": gap <= LOSS_RTOL,
        }
    ]


def plot(metrics: dict):
    methods = list(metrics)
    keys = [k for k in ("acc_id", "acc_ood", "ndcg", "kendall_tau", "sibling_margin")]
    keys = [k for k in keys if k in metrics[methods[0]]]
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3.4))
    for ax, key in zip(axes, keys, strict=True):
        means = [metrics[m][key]["mean"] for m in methods]
        stds = [metrics[m][key]["std"] for m in methods]
        ax.bar(methods, means, yerr=stds, color=[f"C{i}" for i in range(len(methods))], capsize=3)
        ax.set_title(key)
        ax.tick_params(axis="x", rotation=60)
    fig.tight_layout()
    return fig


def run_bench(cfg: Config) -> dict:
    """Every method over cfg.seeds; writes <results-dir>/<preset>.json and its figure together at
    the end (results-dir defaults to runs/<preset>)."""
    validate(cfg)
    start = time.perf_counter()
    items: dict[str, dict[str, list[np.ndarray]]] = {m: {} for m in cfg.methods}
    per_seed: dict[str, dict[str, list[float]]] = {m: {} for m in cfg.methods}
    seconds: dict[str, float] = {}
    tuning: dict = {}
    curves: dict = {}
    for n, seed in enumerate(cfg.seeds):
        # one SFT policy (trained with the first seed) serves every seed: the seeds vary tree
        # sampling, preference training and test problems, and the methods compare paired
        run_cfg = dataclasses.replace(cfg, seed=seed, resume=cfg.resume or n > 0)
        t0 = time.perf_counter()
        if cfg.model_dir:  # the paper's setting: LoRA on a local causal LM, trees from a file
            stage = prepare_hf(run_cfg)
        else:
            stage = prepare(run_cfg, Path(cfg.out), sft_seed=cfg.seeds[0])
        seconds[f"prepare_seed{seed}"] = time.perf_counter() - t0
        cached: dict = {}
        if n == 0 and not cfg.model_dir:
            t0 = time.perf_counter()
            tuning, cached = tune_betas(stage, run_cfg, curves)
            seconds["tuning"] = time.perf_counter() - t0
        for name in cfg.methods:
            t0 = time.perf_counter()
            beta = tuning.get("chosen", {}).get(name, cfg.beta)
            if stage.in_place and name != "sft":  # LoRA trains in place: fresh adapters
                stage = prepare_hf(run_cfg)
            m_cfg = dataclasses.replace(run_cfg, beta=beta)
            policy = cached.get((name, beta))
            if policy is None:
                curve = curves.setdefault(name, {}).setdefault(str(beta), []) if n == 0 else None
                policy = trained_policy(stage, name, m_cfg, curve)
            result = measure(stage, policy, m_cfg)
            for key, value in result.items():
                items[name].setdefault(key, []).append(value)
            for key, value in summary(result).items():
                per_seed[name].setdefault(key, []).append(value)
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t0
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_seed.items()}
    chance = None if cfg.model_dir else 1.0 / cfg.modulus  # a guessed final answer
    claims = claims_from(per_seed, items, cfg.n_boot, chance)
    perf = performance(stage, cfg) if cfg.perf_repeats and not cfg.model_dir else []
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
    doc["tuning"] = tuning
    if cfg.curve_every:
        doc["val_curves"] = {m: {b: c for b, c in d.items() if c} for m, d in curves.items()}
    doc["phase_seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    doc["config"] = json.loads(json.dumps(dataclasses.asdict(cfg)))  # tuples as JSON lists
    write_results(results_dir_of(cfg), cfg.name, doc, {f"{cfg.name}-metrics.png": plot(metrics)})
    return doc
