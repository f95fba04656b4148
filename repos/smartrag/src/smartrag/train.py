"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

One run = one seed: build the world, warm the policy up (pretraining + SFT), copy it as the
frozen reference, optimise SmartRAG with PPO, then evaluate SmartRAG and every baseline on the
held-out questions. Metrics come back flat as "<method>/<metric>".
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save
from tqdm import tqdm

from .baselines import RetrievalClassifier
from .config import Config, validate
from .data import World, make_world, vocabulary
from .policy import Codec, Policy, build_tokenizer
from .ppo import PPOSettings, ppo_train
from .results import atomic_write_bytes, atomic_write_json
from .retrieval import make_retriever
from .rollout import run_episodes, search_probability, summarize_outcomes
from .warmup import warm_up

METHODS = ("no_retrieval", "always_raw", "sft_only", "modular", "smartrag")
TAUS = (0.1, 0.3, 0.5, 0.7, 0.9)
TIMING = ("rollout_tokens_per_s", "_ms_per_query")
"""Metric names ending so are wall-clock measurements, the only ones that vary between runs."""


def deterministic(metrics: dict[str, float]) -> dict[str, float]:
    """The metrics without wall-clock measurements (for determinism checks)."""
    return {k: v for k, v in metrics.items() if not k.endswith(TIMING)}


def build(cfg: Config) -> tuple[World, Codec, Policy]:
    world = make_world(
        cfg.n_entities, cfg.n_values, cfg.n_distractors, cfg.head_frac, cfg.zipf_s, cfg.seed
    )
    codec = Codec(build_tokenizer(vocabulary(world)))
    torch.manual_seed(cfg.seed)
    policy = Policy(
        codec.tok.get_vocab_size(), cfg.n_layer, cfg.d_model, cfg.n_head, cfg.n_positions
    )
    return world, codec, policy.to(cfg.device)


def evaluate_policy(
    policy: Policy, codec: Codec, retriever, questions, cfg: Config, *, decide=None,
    raw_query: bool = False, tau: float | None = None,
) -> dict[str, float]:  # fmt: skip
    """Greedy episodes; the first decision follows the tau rule unless `decide` is given."""
    policy.eval()
    if decide is None:
        p = search_probability(
            policy, codec, codec.encode([f"Q {q.text} <sep>" for q in questions])
        )
        decide = p > (cfg.tau if tau is None else tau)
    _, out = run_episodes(
        policy, codec, retriever, questions, quota=cfg.quota, top_k=cfg.top_k, alpha=cfg.alpha,
        max_new=cfg.max_new, sample=False, decide=decide, raw_query=raw_query,
    )  # fmt: skip
    return summarize_outcomes(questions, out)


def ppo_settings(cfg: Config) -> PPOSettings:
    names = {f.name for f in dataclasses.fields(PPOSettings)}
    values = {k: getattr(cfg, k if k in ("quota", "top_k", "alpha", "max_new", "clip", "vf_coef",
              "gamma", "lam", "kl_init", "kl_target", "kl_horizon", "max_grad_norm")
              else f"ppo_{k}") for k in names}  # fmt: skip
    return PPOSettings(**values)


def _save(policy: Policy, path: Path) -> None:
    state = {k: v.contiguous() for k, v in policy.state_dict().items()}
    state.pop("lm.lm_head.weight", None)  # tied to the input embedding
    atomic_write_bytes(path, save(state))


def _load(policy: Policy, path: Path) -> None:
    policy.load_state_dict(load_file(str(path)), strict=False)
    policy.lm.tie_weights()


def retrieval_latency_ms(retriever, queries: list[str], k: int) -> float:
    start = time.perf_counter()
    for q in queries:
        retriever.search([q], k)
    return (time.perf_counter() - start) / len(queries) * 1000


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Train SmartRAG and its baselines for cfg.seed; writes workdir/config.json first."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    torch.set_num_threads(cfg.threads)
    world, codec, policy = build(cfg)
    retriever = make_retriever(cfg.retriever, world.documents, cfg.device)
    show = not cfg.quiet and sys.stderr.isatty()
    bar = tqdm(total=cfg.pretrain_steps + cfg.sft_steps + cfg.ppo_iterations, disable=not show,
               desc=f"seed {cfg.seed}")  # fmt: skip
    ckpt_sft, ckpt_rl = workdir / "sft.safetensors", workdir / "smartrag.safetensors"
    if cfg.resume and ckpt_sft.exists():
        _load(policy, ckpt_sft)
        knows = np.load(workdir / "labels.npy")
    else:
        knows = warm_up(policy, codec, world, retriever, cfg, bar)["knows"]
        _save(policy, ckpt_sft)
        atomic_write_bytes(workdir / "labels.npy", _npy(knows))
    sft = copy.deepcopy(policy).eval()
    log: list[dict[str, float]] = []
    if cfg.resume and ckpt_rl.exists():
        _load(policy, ckpt_rl)
        if (workdir / "ppo_log.json").exists():
            log = json.loads((workdir / "ppo_log.json").read_text())
    else:
        log = ppo_train(
            policy, sft, codec, retriever, world.train, ppo_settings(cfg), cfg.seed, bar
        )
        _save(policy, ckpt_rl)
        atomic_write_json(workdir / "ppo_log.json", log)
    bar.close()
    test = world.test
    n_test = len(test)
    clf = RetrievalClassifier(world.train, ~knows, cfg.seed)
    results = {
        "no_retrieval": evaluate_policy(
            sft, codec, retriever, test, cfg, decide=np.zeros(n_test, bool)
        ),
        "always_raw": evaluate_policy(
            sft, codec, retriever, test, cfg, decide=np.ones(n_test, bool), raw_query=True
        ),
        "sft_only": evaluate_policy(sft, codec, retriever, test, cfg),
        "modular": evaluate_policy(
            sft, codec, retriever, test, cfg, decide=clf.predict(test), raw_query=True
        ),
        "smartrag": evaluate_policy(policy, codec, retriever, test, cfg),
    }
    for name, model in (("sft_only", sft), ("smartrag", policy)):
        for tau in TAUS:
            m = evaluate_policy(model, codec, retriever, test, cfg, tau=tau)
            results[name][f"em@tau{tau}"] = m["em"]
            results[name][f"retrieval_rate@tau{tau}"] = m["retrieval_rate"]
    if log:
        results["smartrag"]["train_reward_first"] = log[0]["reward"]
        results["smartrag"]["train_reward_last"] = float(np.mean([r["reward"] for r in log[-5:]]))
        results["smartrag"]["rollout_tokens_per_s"] = float(
            np.mean([r["tokens_per_s"] for r in log])
        )
    queries = [q.rewrite for q in test]
    results["smartrag"][f"{cfg.retriever}_ms_per_query"] = retrieval_latency_ms(
        retriever, queries, cfg.top_k
    )
    if cfg.swap_retriever:
        other = make_retriever("dense" if cfg.retriever == "bm25" else "bm25", world.documents,
                               cfg.device)  # fmt: skip
        swapped = evaluate_policy(policy, codec, other, test, cfg)
        results["smartrag"]["em_swapped_retriever"] = swapped["em"]
        results["smartrag"]["hit_rate_swapped_retriever"] = swapped["hit_rate"]
        results["smartrag"][f"{other.name}_ms_per_query"] = retrieval_latency_ms(
            other, queries, cfg.top_k
        )
    metrics = {f"{m}/{k}": float(v) for m, d in results.items() for k, v in d.items()}
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def _npy(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
