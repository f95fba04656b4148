"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

One run = one seed: build the world, warm the policy up (pretraining + SFT), copy it as the
frozen reference, optimise SmartRAG with PPO, then evaluate SmartRAG and every baseline on the
held-out questions. With `rewrite_control` a second warm-up from the same pretrained LM without
gold rewrites (p_rewrite = 0) gets its own PPO run and evaluation (the control of
rewriter-finds-answers). Metrics come back flat as "<method>/<metric>". `evaluate(cfg, workdir)`
reloads the checkpoints such a run saved and evaluates them again.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import sys
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save
from tqdm import tqdm

from .baselines import RetrievalClassifier, train_rewriter
from .config import Config, validate
from .data import World, make_world, vocabulary, world_from_files
from .evaluation import (
    decision_scores,
    episodes,
    evaluate_all,
    evaluate_policy,
    rewrite_control_rows,
)
from .policy import Codec, Policy, build_tokenizer
from .ppo import PPOSettings, ppo_train
from .results import atomic_write_bytes, atomic_write_json, load_safetensors, read_config, read_json
from .retrieval import make_retriever
from .warmup import warm_up

METHODS = ("majority", "no_retrieval", "always_raw", "sft_only", "modular", "smartrag", "oracle")
"""The results table's rows: floors, baselines, SmartRAG, the oracle."""
TIMING = ("rollout_tokens_per_s", "_ms_per_query", "_wall_s")
"""Metric names ending so are wall-clock measurements, the only ones that vary between runs."""


CONTROL_SFT, CONTROL_RL = "sft_no_rewrite.safetensors", "smartrag_no_rewrite.safetensors"
"""Checkpoints of the p_rewrite = 0 control run (`rewrite_control`)."""


def deterministic(metrics: dict[str, float]) -> dict[str, float]:
    """The metrics without wall-clock measurements (for determinism checks)."""
    return {k: v for k, v in metrics.items() if not k.endswith(TIMING)}


def build(cfg: Config) -> tuple[World, Codec, Policy]:
    """The world (synthetic, or --questions/--corpus files), the codec and the policy."""
    if bool(cfg.questions) != bool(cfg.corpus):
        raise ValueError("give both --questions FILE and --corpus FILE (JSONL), or neither")
    if cfg.questions:
        world = world_from_files(cfg.questions, cfg.corpus, cfg.head_frac, cfg.seed)
    else:
        world = make_world(
            cfg.n_entities, cfg.n_values, cfg.n_distractors, cfg.head_frac, cfg.zipf_s, cfg.seed
        )
    torch.manual_seed(cfg.seed)
    if cfg.policy_path:
        codec = Codec.from_pretrained(cfg.policy_path)
        policy = Policy.from_pretrained(cfg.policy_path, codec.tok.get_vocab_size(), cfg.lora_r)
    else:
        codec = Codec(build_tokenizer(vocabulary(world)))
        policy = Policy.from_config(
            codec.tok.get_vocab_size(), cfg.n_layer, cfg.d_model, cfg.n_head, cfg.n_positions
        )
    return world, codec, policy.to(cfg.device)


def alpha_run(
    world: World, codec: Codec, retriever, cfg: Config, sft: Policy, alpha: float
) -> dict[str, float]:
    """Ablation: PPO from the same SFT policy with retrieval cost `alpha`, evaluated like the
    main run (the fixed tau)."""
    policy = copy.deepcopy(sft)
    ppo_train(policy, sft, codec, retriever, world.train,
              ppo_settings(dataclasses.replace(cfg, alpha=alpha)), cfg.seed)  # fmt: skip
    return evaluate_policy(policy, codec, retriever, world, cfg).fixed


def ppo_settings(cfg: Config) -> PPOSettings:
    names = {f.name for f in dataclasses.fields(PPOSettings)}
    values = {k: getattr(cfg, k if k in ("quota", "top_k", "alpha", "max_new", "clip", "vf_coef",
              "gamma", "lam", "kl_init", "kl_target", "kl_horizon", "max_grad_norm")
              else f"ppo_{k}") for k in names}  # fmt: skip
    return PPOSettings(**values)


def _save(policy: Policy, path: Path) -> None:
    state, seen = {}, set()
    for k, v in policy.state_dict().items():
        if v.data_ptr() not in seen:  # tied weights (lm_head = embedding) are stored once
            seen.add(v.data_ptr())
            state[k] = v.contiguous()
    atomic_write_bytes(path, save(state))


def _load(policy: Policy, path: Path) -> None:
    try:
        missing, unexpected = policy.load_state_dict(load_safetensors(path), strict=False)
    except RuntimeError as exc:  # a tensor of the wrong shape
        first = str(exc).strip().splitlines()[0]
        raise ValueError(
            f"{path}: does not match the policy ({first}); use a fresh --out"
        ) from None
    if unexpected or any("lm_head" not in k for k in missing):
        raise ValueError(f"{path}: does not match the policy (use a fresh --out)")
    policy.lm.tie_weights()


def _load_labels(path: Path, n: int) -> np.ndarray:
    """The warm-up's per-train-question `knows` labels (labels.npy), checked."""
    try:
        knows = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such labels file") from None
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: unreadable labels file ({exc}); use a fresh --out") from None
    if knows.dtype != bool or knows.shape != (n,):
        raise ValueError(f"{path}: expected {n} booleans, got {knows.dtype} {knows.shape}")
    return knows


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
    retriever = make_retriever(cfg.retriever, world.documents, cfg.device, cfg.encoder)
    show = not cfg.quiet and sys.stderr.isatty()
    twins = 2 if cfg.rewrite_control else 1
    bar = tqdm(total=cfg.pretrain_steps + twins * (cfg.sft_steps + cfg.ppo_iterations),
               disable=not show, desc=f"seed {cfg.seed}")  # fmt: skip
    ckpt_sft, ckpt_rl = workdir / "sft.safetensors", workdir / "smartrag.safetensors"
    # the p_rewrite = 0 control's warm-up and PPO checkpoints
    ckpt_sft0, ckpt_rl0 = workdir / CONTROL_SFT, workdir / CONTROL_RL
    clock = [time.perf_counter()]
    wall: dict[str, float] = {}

    def lap(name: str) -> None:
        clock.append(time.perf_counter())
        wall[f"{name}_wall_s"] = clock[-1] - clock[-2]

    sft0 = None  # the control's warm-up policy
    if cfg.resume and ckpt_sft.exists() and (not cfg.rewrite_control or ckpt_sft0.exists()):
        if cfg.rewrite_control:
            sft0 = copy.deepcopy(policy)
            _load(sft0, ckpt_sft0)
        _load(policy, ckpt_sft)
        knows = _load_labels(workdir / "labels.npy", len(world.train))
    else:
        warm = warm_up(policy, codec, world, retriever, cfg, bar)
        knows = warm["knows"]
        if cfg.rewrite_control:
            sft0, wall["rewrite_control_sft_wall_s"] = warm["no_rewrite"], warm["no_rewrite_sft_s"]
            _save(sft0, ckpt_sft0)
        _save(policy, ckpt_sft)
        atomic_write_bytes(workdir / "labels.npy", _npy(knows))
    lap("warmup")
    sft = copy.deepcopy(policy).eval()
    log: list[dict[str, float]] = []
    if cfg.resume and ckpt_rl.exists():
        _load(policy, ckpt_rl)
        if (workdir / "ppo_log.json").exists():
            log = read_json(workdir / "ppo_log.json", "PPO log", list)
    else:
        log = ppo_train(
            policy, sft, codec, retriever, world.train, ppo_settings(cfg), cfg.seed, bar
        )
        _save(policy, ckpt_rl)
        atomic_write_json(workdir / "ppo_log.json", log)
    lap("ppo")
    policy0 = None
    if sft0 is not None:
        sft0.eval()
        policy0 = copy.deepcopy(sft0)
        if cfg.resume and ckpt_rl0.exists():
            _load(policy0, ckpt_rl0)
        else:
            ppo_train(policy0, sft0, codec, retriever, world.train, ppo_settings(cfg), cfg.seed,
                      bar)  # fmt: skip
            _save(policy0, ckpt_rl0)
    bar.close()
    lap("rewrite_control_ppo")
    clf = RetrievalClassifier(world.train, ~knows, cfg.seed)
    rewriter, solved = train_rewriter(sft, codec, retriever, world.train, cfg)
    _save(rewriter, workdir / "rewriter.safetensors")
    lap("rewriter")
    results = evaluate_all(world, codec, retriever, cfg, sft, policy, rewriter, clf)
    results["modular"]["rewriter_train_solved"] = solved
    lap("evaluation")
    if policy0 is not None:
        results.update(rewrite_control_rows(world, codec, retriever, cfg, sft0, policy0))
    lap("rewrite_control_evaluation")
    for alpha in cfg.alpha_sweep:
        results[f"smartrag_alpha{alpha}"] = alpha_run(world, codec, retriever, cfg, sft, alpha)
    lap("alpha_sweep")
    results["smartrag"].update(wall)
    if log:
        results["smartrag"]["train_reward_first"] = log[0]["reward"]
        results["smartrag"]["train_reward_last"] = float(np.mean([r["reward"] for r in log[-5:]]))
        results["smartrag"]["rollout_tokens_per_s"] = float(
            np.mean([r["tokens_per_s"] for r in log])
        )
    retrieval_checks(results["smartrag"], world, codec, retriever, policy, cfg)
    metrics = {f"{m}/{k}": float(v) for m, d in results.items() for k, v in d.items()}
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def retrieval_checks(
    row: dict[str, float], world: World, codec: Codec, retriever, policy: Policy, cfg: Config
) -> None:
    """Into SmartRAG's row: the retriever's latency and, with cfg.swap_retriever, SmartRAG's EM
    and hit rate with the other retriever (and that one's latency)."""
    test = world.test
    queries = [q.rewrite for q in test]
    row[f"{cfg.retriever}_ms_per_query"] = retrieval_latency_ms(retriever, queries, cfg.top_k)
    if cfg.swap_retriever:
        other = make_retriever("dense" if cfg.retriever == "bm25" else "bm25", world.documents,
                               cfg.device, cfg.encoder)  # fmt: skip
        decide = decision_scores(policy, codec, test, cfg) > row["tau"]
        swapped, _ = episodes(policy, codec, other, test, cfg, decide)
        row["em_swapped_retriever"] = swapped["em"]
        row["hit_rate_swapped_retriever"] = swapped["hit_rate"]
        row[f"{other.name}_ms_per_query"] = retrieval_latency_ms(other, queries, cfg.top_k)


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def run_config(workdir: Path) -> Config:
    """The Config a `train` run saved in workdir/config.json (a ValueError naming the file when
    it is missing, corrupt or not a valid configuration)."""
    return read_config(Path(workdir) / "config.json", Config, validate)


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Reload what a `train` run saved in workdir (the warm-up policy sft.safetensors, SmartRAG
    smartrag.safetensors, the modular baseline's rewriter.safetensors, the warm-up labels
    labels.npy its classifier is fitted on and, for a `rewrite_control` run, the control's
    sft_no_rewrite / smartrag_no_rewrite.safetensors) and evaluate every method again on the run's
    held-out questions, rebuilt from its config.json (or, given --questions and --corpus, on
    the test split of those files instead). The device and threads are this command's. The alpha-sweep rows (PPO reruns, not saved) and the training curves are not
    repeated; every other metric is train's again. Writes nothing."""
    workdir = Path(workdir)
    run = run_config(workdir)
    files = {"questions": cfg.questions, "corpus": cfg.corpus} if cfg.questions else {}
    run = dataclasses.replace(
        run, out=str(workdir), device=cfg.device, threads=cfg.threads, quiet=cfg.quiet, **files
    )
    torch.set_num_threads(run.threads)
    world, codec, sft = build(run)
    _load(sft, workdir / "sft.safetensors")
    policy, rewriter = copy.deepcopy(sft), copy.deepcopy(sft)
    _load(policy, workdir / "smartrag.safetensors")
    _load(rewriter, workdir / "rewriter.safetensors")
    knows = _load_labels(workdir / "labels.npy", len(world.train))
    retriever = make_retriever(run.retriever, world.documents, run.device, run.encoder)
    clf = RetrievalClassifier(world.train, ~knows, run.seed)
    results = evaluate_all(
        world, codec, retriever, run, sft.eval(), policy.eval(), rewriter.eval(), clf
    )
    if run.rewrite_control:
        sft0, policy0 = copy.deepcopy(sft), copy.deepcopy(sft)
        _load(sft0, workdir / CONTROL_SFT)
        _load(policy0, workdir / CONTROL_RL)
        results.update(
            rewrite_control_rows(world, codec, retriever, run, sft0.eval(), policy0.eval())
        )
    retrieval_checks(results["smartrag"], world, codec, retriever, policy, run)
    return {f"{m}/{k}": float(v) for m, d in results.items() for k, v in d.items()}
