"""Benchmark (quick or paper preset): every method over the seeds, claims from the metrics."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from .config import Config, validate
from .evaluation import TAUS
from .results import claim, read_json, results_document, summarize, write_results
from .runtime import results_dir_of
from .train import METHODS, train_and_evaluate

PAPER = "smartrag"
EM_MARGIN = 3.0
"""SmartRAG's EM must exceed SFT-only's by at least this many points (mean paired difference),
with the 95% interval of the paired difference above 0. Fails if RL adds < 3 EM points."""
HEAD_MAX, TAIL_MIN = 30.0, 70.0
"""Retrieval rate (%) must be below HEAD_MAX on head and above TAIL_MIN on tail questions, and the
interval of the per-seed tail - head gap above 0. Fails for a policy that retrieves regardless of
popularity (e.g. the over-retrieving SFT policy of the plain world)."""
LEVEL = 0.95
"""Confidence level of the paired intervals."""
PAPER_NOTE = "Flan-T5-large / LLaMA-2-7B on PopQA, AmbigNQ, HotpotQA with Bing"
CONTROLS = {
    "smartrag-beats-sft-only": "SmartRAG with shuffled retrieved documents in SmartRAG's place",
    "smartrag-beats-modular": "SmartRAG with shuffled retrieved documents in SmartRAG's place",
    "retrieves-on-tail-not-head": "SFT-only (no RL), and SmartRAG under shuffled head labels",
    "rewriter-finds-answers": "SmartRAG with shuffled retrieved documents in SmartRAG's place",
}


def interval(diffs: list[float], seed: int = 0) -> dict:
    """Mean of per-seed paired differences with a t and a bootstrap 95% interval (None, None
    with fewer than two seeds: nothing can then be claimed)."""
    d = np.asarray(diffs, dtype=float)
    out = {"mean": float(d.mean()), "values": [float(x) for x in d], "t": [None, None],
           "bootstrap": [None, None]}  # fmt: skip
    if len(d) >= 2:
        half = stats.t.ppf(0.5 + LEVEL / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        boot = np.random.default_rng(seed).choice(d, (10000, len(d))).mean(1)
        q = np.quantile(boot, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        out["t"] = [float(d.mean() - half), float(d.mean() + half)]
        out["bootstrap"] = [float(q[0]), float(q[1])]
    return out


def _above(iv: dict, x: float = 0.0) -> bool:
    return iv["t"][0] is not None and iv["t"][0] > x


def _below(iv: dict, x: float = 0.0) -> bool:
    return iv["t"][1] is not None and iv["t"][1] < x


def _fmt(iv: dict) -> str:
    lo, hi = iv["t"]
    ci = "n/a" if lo is None else f"[{lo:+.1f}, {hi:+.1f}]"
    return f"{iv['mean']:+.1f} (95% t {ci})"


def paired(metrics: dict, a: str, b: str, key: str, key_b: str | None = None) -> dict:
    """Interval of metric(a) - metric(b) over the same seeds."""
    va, vb = metrics[a][key]["values"], metrics[b][key_b or key]["values"]
    return interval([x - y for x, y in zip(va, vb, strict=True)])


def beats_sft(metrics: dict, method: str) -> tuple[bool, str, dict]:
    em, rate = paired(metrics, method, "sft_only", "em"), paired(metrics, method, "sft_only",
                                                                   "retrieval_rate")  # fmt: skip
    ok = em["mean"] >= EM_MARGIN and _above(em) and _below(rate)
    return ok, f"EM {_fmt(em)}, retrieval rate {_fmt(rate)} points", {"em": em, "rate": rate}


def beats_modular(metrics: dict, method: str) -> tuple[bool, str, dict]:
    em = paired(metrics, method, "modular", "em")
    return _above(em), f"EM {_fmt(em)} points", {"em": em}


def head_tail(metrics: dict, method: str, suffix: str = "") -> tuple[bool, str, dict]:
    if f"retrieval_rate_head{suffix}" not in metrics[method]:  # a test split without head or tail
        return False, "no head or no tail question in the test split", {}
    head = metrics[method][f"retrieval_rate_head{suffix}"]
    tail = metrics[method].get(f"retrieval_rate_tail{suffix}", {"values": []})
    if len(head["values"]) != len(tail["values"]):
        return False, "some seed's test split lacks head or tail questions", {}
    gap = interval([t - h for t, h in zip(tail["values"], head["values"], strict=True)])
    ok = head["mean"] < HEAD_MAX and tail["mean"] > TAIL_MIN and _above(gap)
    text = f"head {head['mean']:.1f}%, tail {tail['mean']:.1f}%, tail - head {_fmt(gap)}"
    return ok, text, {"gap": gap}


def finds_answers(metrics: dict, method: str) -> tuple[bool, str, dict]:
    hit = paired(metrics, method, "sft_only", "hit_rate")
    return _above(hit), f"answer hit rate {_fmt(hit)} points", {"hit_rate": hit}


def claims_from(metrics: dict) -> list[dict]:
    """Each claim: the check on SmartRAG, the same check on a negative control that must fail,
    the paired intervals; holds = check passes and every control fails."""
    shuffled = "smartrag_shuffled_docs"
    specs = [
        ("smartrag-beats-sft-only",
         (f"SmartRAG's EM is >= {EM_MARGIN} points above SFT-only's (paired interval > 0), with a "
         "lower retrieval rate (paired interval < 0)"),
         f"joint RL beats the SFT-only pipeline on EM/F1 while retrieving less ({PAPER_NOTE})",
         beats_sft, [("smartrag", ""), (shuffled, "")]),
        ("smartrag-beats-modular",
         ("SmartRAG's EM is above the modular pipeline's (separately trained classifier, "
         "rewriter and reader; paired interval > 0)"),
         "joint optimisation beats separately optimised decision and rewriter modules",
         beats_modular, [("smartrag", ""), (shuffled, "")]),
        ("retrieves-on-tail-not-head",
         (f"SmartRAG retrieves on < {HEAD_MAX:.0f}% of head and > {TAIL_MIN:.0f}% of tail "
         "questions (tail - head interval > 0)"),
         "the policy retrieves mainly for long-tail (unpopular) questions (PopQA analysis)",
         head_tail, [("smartrag", ""), ("sft_only", ""), ("smartrag", "_shuffled_labels")]),
        ("rewriter-finds-answers",
         ("retrieved documents contain the answer more often for SmartRAG than for SFT-only "
         "(paired interval > 0)"),
         "the jointly learnt rewriter writes queries that suit the retriever better",
         finds_answers, [("smartrag", ""), (shuffled, "")]),
    ]  # fmt: skip
    out = []
    for cid, statement, paper, check, runs in specs:
        results = [check(metrics, m, sfx) if sfx else check(metrics, m) for m, sfx in runs]
        ok, text, intervals = results[0]
        controls = [{"method": m + sfx, "passes_check": bool(r[0]), "ours": r[1]}
                    for (m, sfx), r in zip(runs[1:], results[1:], strict=True)]  # fmt: skip
        c = claim(cid, statement, paper, text, ok and not any(c["passes_check"] for c in controls))
        c.update(intervals=intervals, negative_control=CONTROLS[cid], controls=controls)
        out.append(c)
    return out


def performance(metrics: dict) -> list[dict]:
    sm = metrics["smartrag"]
    perf = []
    if "rollout_tokens_per_s" in sm:
        tps = sm["rollout_tokens_per_s"]["mean"]
        perf.append(
            {
                "id": "rollout-throughput",
                "what": "PPO rollout (sampling, 1 thread): seconds per 1000 generated tokens; "
                f"{tps:.0f} tokens/s",
                "ours_s": 1000.0 / tps,
                "tokens_per_s": tps,
            }
        )
    if "bm25_ms_per_query" in sm and "dense_ms_per_query" in sm:
        bm, de = sm["bm25_ms_per_query"]["mean"], sm["dense_ms_per_query"]["mean"]
        perf.append(
            {
                "id": "retrieval-latency",
                "what": "seconds per query, top-k over the seed's corpus (one query at a time)",
                "ours_s": bm / 1000,
                "peer": "MiniLM-L6 encoding + faiss IndexFlatIP (dense)",
                "peer_s": de / 1000,
                "ratio": bm / de,
            }
        )
    return perf


def plot(metrics: dict, logs: list[list[dict]], alpha: float):
    sweep = alpha_sweep(metrics, alpha)
    fig, axes = plt.subplots(1, 5 if sweep else 4, figsize=(22 if sweep else 18, 3.6))
    for ax, key in zip(axes[:2], ("em", "retrieval_rate"), strict=True):
        ax.bar(METHODS, [metrics[m][key]["mean"] for m in METHODS],
               yerr=[metrics[m][key]["std"] for m in METHODS], capsize=3,
               color=["0.75", "0.6", "0.45", "C0", "C2", "C3", "C1"])  # fmt: skip
        ax.set_title(f"{key} (%)")
        ax.tick_params(axis="x", rotation=30)
    ax = axes[2]
    for m in ("sft_only", "smartrag"):
        rate = [metrics[m][f"retrieval_rate@tau{t}"]["mean"] for t in TAUS]
        em = [metrics[m][f"em@tau{t}"]["mean"] for t in TAUS]
        ax.plot(rate, em, "o-", label=m)
    ax.set_xlabel("retrieval rate (%) over tau")
    ax.set_ylabel("EM (%)")
    ax.legend()
    ax = axes[3]
    for i, log in enumerate(logs):
        ax.plot([r["reward"] for r in log], label=f"seed {i}")
    ax.set_xlabel("PPO iteration")
    ax.set_ylabel("mean episode reward")
    ax.legend()
    if sweep:
        ax = axes[4]
        alphas = sorted(sweep)
        for key in ("em", "retrieval_rate"):
            ax.plot(alphas, [sweep[a][key]["mean"] for a in alphas], "o-", label=key)
        ax.set_xlabel("retrieval cost alpha")
        ax.set_ylabel("%")
        ax.legend()
    fig.tight_layout()
    return fig


def alpha_sweep(metrics: dict, alpha: float) -> dict[float, dict]:
    """{alpha: SmartRAG's metrics} for the main run (`alpha`) and every `--alpha-sweep` run."""
    out = {float(m.removeprefix("smartrag_alpha")): d for m, d in metrics.items()
           if m.startswith("smartrag_alpha")}  # fmt: skip
    return {**out, alpha: metrics["smartrag"]} if out else {}


def run_bench(cfg: Config) -> dict:
    """Every seed's run into --out/seed<s>, then <results-dir>/<preset>.json with its figure
    (written together at the end; results-dir defaults to runs/<preset>)."""
    validate(cfg)
    start = time.perf_counter()
    per_method: dict[str, dict[str, list[float]]] = {}
    logs = []
    for seed in cfg.seeds:
        workdir = Path(cfg.out) / f"seed{seed}"
        flat = train_and_evaluate(dataclasses.replace(cfg, seed=seed), workdir)
        for key, value in flat.items():
            method, metric = key.split("/", 1)
            per_method.setdefault(method, {}).setdefault(metric, []).append(value)
        log_path = workdir / "ppo_log.json"
        logs.append(read_json(log_path, "PPO log", list) if log_path.exists() else [])
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    doc = results_document(
        PAPER,
        cfg.name,
        list(cfg.seeds),
        metrics,
        claims_from(metrics),
        time.perf_counter() - start,
        cfg.device,
        performance(metrics),
    )
    doc["tuning"] = {
        "split": "validation (10% of the questions, disjoint from train and test)",
        "selected_by": "EM on validation; ties go to the larger tau (fewer retrievals)",
        "grid": {"tau": list(TAUS)},
        "methods": ["sft_only", "modular", "modular_raw_query", "smartrag"]
        + [f"smartrag_alpha{a}" for a in cfg.alpha_sweep],
        "fixed": {"alpha": cfg.alpha, "ppo_lr": cfg.ppo_lr, "lm_lr": cfg.lm_lr},
    }
    figure = plot(metrics, logs, cfg.alpha)
    write_results(results_dir_of(cfg), cfg.name, doc, {f"{cfg.name}_metrics.png": figure})
    return doc
