"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

Pipeline per seed: SFT of a GPT-2 policy on chain solutions (30% with a propagating error) ->
preference trees from the SFT policy -> preference optimisation with one method -> greedy
accuracy in/out of distribution and ranking quality on held-out trees.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from .baselines import dpo_all_pairs, dpo_gold_vs_worst
from .config import METHODS, Config, validate
from .data import (
    Tokenizer,
    Tree,
    load_trees,
    slipped_solution,
    solution,
    vocab,
    wrong_solution,
)
from .evaluation import (
    fit_steps,
    greedy_hits,
    implicit_rewards,
    ranking_per_tree,
    reference_steps,
    step_counts,
    step_logps,
    tree_batch,
)
from .hf import load_adapters, prepare_hf
from .policy import build_policy, encode_pairs, forward
from .results import atomic_write_json, read_config
from .stage import Stage, load_weights, save_weights
from .tree_loss import plr_loss, tpo_loss
from .trees import build_trees, problems


def _bar(cfg: Config, total: int, desc: str) -> tqdm:
    return tqdm(total=total, desc=desc, disable=cfg.quiet or not sys.stderr.isatty(), leave=False)


def _rng(cfg: Config, stream: int) -> np.random.Generator:
    return np.random.default_rng([cfg.seed, stream])


def train_sft(model: torch.nn.Module, tok: Tokenizer, cfg: Config) -> None:
    """Next-token cross-entropy on response tokens; some solutions carry a propagating error so
    that sampled branches differ in quality."""
    rng = _rng(cfg, 1)
    probs = problems(rng, cfg.sft_examples, cfg.min_steps, cfg.max_steps, cfg.modulus)
    texts = []
    for p in probs:
        text = wrong_solution(p, rng)[0] if rng.random() < cfg.sft_corrupt else solution(p)
        if cfg.sft_slip and rng.random() < cfg.sft_slip:  # no draw at 0: default data unchanged
            text = slipped_solution(p)
        texts.append(text)
    data = encode_pairs(tok, [p.prompt() for p in probs], texts).to(cfg.device)  # tokenised once
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.sft_lr, weight_decay=0.01)
    bar = _bar(cfg, cfg.sft_steps, "sft")
    for _ in range(cfg.sft_steps):
        idx = rng.choice(len(probs), size=min(cfg.sft_batch, len(probs)), replace=False)
        batch = data.select(torch.as_tensor(idx, device=cfg.device))
        logps, _ = forward(model, batch)
        loss = -logps.sum() / batch.response_mask[:, 1:].sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(nll=f"{loss.item():.3f}")
        bar.update()
    bar.close()


def prepare(cfg: Config, workdir: Path, sft_seed: int | None = None, reload: bool = False) -> Stage:
    """SFT with sft_seed (default cfg.seed), or reuse workdir/sft.safetensors with --resume (with
    `reload`, the checkpoint must be there: eval); then build the trees and test problems with
    cfg.seed."""
    tok = Tokenizer(cfg.modulus)
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed if sft_seed is None else sft_seed)
    model = build_policy(len(vocab(cfg.modulus)), cfg.n_layer, cfg.d_model, cfg.n_head)
    model.to(cfg.device)
    workdir.mkdir(parents=True, exist_ok=True)
    ckpt = workdir / "sft.safetensors"
    if reload or (cfg.resume and ckpt.exists()):
        load_weights(model, ckpt, cfg.device)
    else:
        train_sft(model, tok, cfg if sft_seed is None else dataclasses.replace(cfg, seed=sft_seed))
        save_weights(model, ckpt)
    model.eval()
    rng, gen = _rng(cfg, 2), torch.Generator().manual_seed(cfg.seed)
    n_all = cfg.n_trees + cfg.n_heldout_trees
    probs = problems(rng, n_all, cfg.min_steps, cfg.max_steps, cfg.modulus)
    trees = build_trees(model, tok, probs, cfg.n_branches, cfg.temperature, rng, gen)
    train_trees = load_trees(cfg.trees) if cfg.trees else trees[: cfg.n_trees]
    heldout = trees[cfg.n_trees :]
    test_rng = _rng(cfg, 3)
    lo, hi = cfg.min_steps, cfg.max_steps
    return Stage(
        tok,
        model,
        train_trees,
        heldout,
        problems(test_rng, cfg.n_eval, lo, hi, cfg.modulus),
        problems(test_rng, cfg.n_eval, hi + 1, hi + 2, cfg.modulus),
        problems(_rng(cfg, 5), cfg.n_val, lo, hi, cfg.modulus),
        reference_steps(model, tok, train_trees, cfg.device),
        reference_steps(model, tok, heldout, cfg.device),
    )


ASR_VARIANTS = {"tpo": "paper", "tpo_code": "code", "tpo_anchor": "anchor"}


def preference_loss(
    method: str,
    policy: torch.nn.Module,
    tok: Tokenizer,
    trees: list[Tree],
    ref_steps: list[torch.Tensor],
    cfg: Config,
) -> torch.Tensor:
    """One method's loss on a batch of trees; ref_steps are the trees' cached reference
    per-step log-probs (`reference_steps`), so only the policy runs here."""
    batch, scores = tree_batch(tok, trees, cfg.device)
    b, n = scores.shape
    asr = ASR_VARIANTS.get(method)
    steps, states = step_logps(policy, batch, hidden=asr is not None)
    k = steps.shape[1]
    ratio = (steps - fit_steps(ref_steps, k)).view(b, n, k)  # per-step log pi/pi_ref
    if asr is not None:
        counts = step_counts(batch, k).view(b, n, k)
        states = states.view(b, n, k, -1)
        return tpo_loss(ratio, states, counts, scores, cfg.beta, asr, cfg.step_merge)
    rewards = cfg.beta * ratio.sum(-1)
    if method == "tpo_plr":
        return plr_loss(rewards, scores)
    if cfg.dpo_reward == "mean":  # official loss.py: masked mean over the response tokens
        rewards = rewards / step_counts(batch, k).sum(-1).view(b, n).clamp_min(1.0)
    if method == "dpo":
        return dpo_gold_vs_worst(rewards, scores)
    if method == "dpo_all":
        return dpo_all_pairs(rewards, scores)
    raise ValueError(f"unknown preference method {method!r}; expected one of {METHODS[1:]}")


def shuffled_scores(trees: list[Tree], rng: np.random.Generator) -> list[Tree]:
    """The negative control's trees: each tree's scores permuted at random among its responses."""
    return [
        dataclasses.replace(t, scores=[t.scores[i] for i in rng.permutation(len(t.scores))])
        for t in trees
    ]


def train_preference(
    stage: Stage, method: str, cfg: Config, curve: list | None = None
) -> torch.nn.Module:
    """AdamW (weight decay 0.01, as tpo_train.py) on the policy; the SFT model is the frozen
    reference. Batches hold trees with the same number of responses. tpo_shuffled trains TPO
    on scores shuffled within each tree (the same trees, responses and reference). With a
    `curve` list and cfg.curve_every > 0, [step, validation accuracy] pairs are appended every
    curve_every steps (a training-stability record; it does not change the training)."""
    policy = stage.sft if stage.in_place else copy.deepcopy(stage.sft)
    policy.train()
    params = [q for q in policy.parameters() if q.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.pref_lr, weight_decay=0.01)
    trees_all = stage.train_trees
    if method == "tpo_shuffled":
        trees_all, method = shuffled_scores(trees_all, _rng(cfg, 6)), "tpo"
    groups: dict[int, list[int]] = {}
    for i, t in enumerate(trees_all):
        groups.setdefault(len(t.responses), []).append(i)
    sizes = sorted(groups)
    weights = np.array([len(groups[s]) for s in sizes], dtype=float)
    rng = _rng(cfg, 4)
    bar = _bar(cfg, cfg.pref_steps, method)
    for step in range(1, cfg.pref_steps + 1):
        group = groups[sizes[rng.choice(len(sizes), p=weights / weights.sum())]]
        picked = rng.choice(len(group), size=min(cfg.pref_batch, len(group)), replace=False)
        idx = [group[j] for j in picked]
        trees = [trees_all[i] for i in idx]
        refs = [stage.train_ref[i] for i in idx]
        loss = preference_loss(method, policy, stage.tok, trees, refs, cfg)
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.4f}")
        bar.update()
        if curve is not None and cfg.curve_every and step % cfg.curve_every == 0:
            policy.eval()
            curve.append([step, float(greedy_hits(policy, stage.tok, stage.val).mean())])
            policy.train()
    bar.close()
    return policy.eval()


def trained_policy(
    stage: Stage, method: str, cfg: Config, curve: list | None = None
) -> torch.nn.Module:
    torch.manual_seed(cfg.seed)
    return stage.sft if method == "sft" else train_preference(stage, method, cfg, curve)


def measure(stage: Stage, policy: torch.nn.Module, cfg: Config) -> dict[str, np.ndarray]:
    """Per-item results: greedy hits on each test problem (none for trees from a file with
    --model-dir), ranking figures on each held-out tree."""
    rewards = implicit_rewards(policy, stage.tok, stage.heldout_trees, stage.heldout_ref, cfg.beta)
    splits = {"acc_id": stage.test_id, "acc_ood": stage.test_ood}
    hits = {k: greedy_hits(policy, stage.tok, v) for k, v in splits.items() if v}
    return {**hits, **ranking_per_tree(rewards, stage.heldout_trees)}


def summary(per_item: dict[str, np.ndarray]) -> dict[str, float]:
    """The per-item results averaged (sibling margin over trees that have sibling pairs)."""
    return {k: float(np.nanmean(v)) if np.isfinite(v).any() else 0.0 for k, v in per_item.items()}


def run_method(
    stage: Stage, method: str, cfg: Config, workdir: Path, policy: torch.nn.Module | None = None
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Train one method on the stage's trees (unless `policy` is given) and measure it; writes
    workdir/config.json first (and curve.json with --curve-every). Returns the summary metrics
    and the per-item results."""
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", {**dataclasses.asdict(cfg), "method": method})
    if policy is None:
        curve: list = []
        policy = trained_policy(stage, method, cfg, curve)
        if curve:  # --curve-every: validation accuracy along training
            atomic_write_json(workdir / "curve.json", {"method": method, "val_acc": curve})
    per_item = measure(stage, policy, cfg)
    metrics = summary(per_item)
    if stage.in_place and method != "sft":
        policy.save_pretrained(str(workdir / "lora"))  # the adapters only
    elif method != "sft":
        save_weights(policy, workdir / "policy.safetensors")
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics, per_item


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """SFT, trees, then cfg.method for cfg.seed; returns its metrics (also in metrics.json)."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    stage = prepare_hf(cfg) if cfg.model_dir else prepare(cfg, workdir)
    return run_method(stage, cfg.method, cfg, workdir)[0]


def run_config(workdir: Path) -> Config:
    """The Config a `train` run saved in workdir/config.json (a ValueError naming the file when
    it is missing, corrupt or not a valid configuration)."""
    return read_config(Path(workdir) / "config.json", Config, validate)


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Reload what a `train` run saved in workdir (sft.safetensors and the method's
    policy.safetensors; with --model-dir the LoRA adapters in lora/) and measure it again on the
    run's test problems and held-out trees, rebuilt from its config.json. The device, threads and
    quiet flag are this command's. Returns train's metrics again; writes nothing."""
    workdir = Path(workdir)
    run = dataclasses.replace(
        run_config(workdir),
        out=str(workdir),
        device=cfg.device,
        threads=cfg.threads,
        quiet=cfg.quiet,
        resume=True,
    )
    if run.model_dir:
        stage = prepare_hf(run)
        if run.method != "sft":
            load_adapters(stage.sft, workdir / "lora")
        policy = stage.sft
    else:
        stage = prepare(run, workdir, reload=True)
        policy = stage.sft
        if run.method != "sft":
            policy = load_weights(
                copy.deepcopy(stage.sft), workdir / "policy.safetensors", run.device
            )
    if cfg.trees and cfg.trees != run.trees:  # a user's tree file: ranking figures on all of it
        stage = on_user_trees(stage, cfg.trees, run.device)
    return summary(measure(stage, policy.eval(), run))


def on_user_trees(stage: Stage, path: str, device: str) -> Stage:
    """The stage with every tree of `path` as held-out trees (no accuracy problems); the
    reference log-probs come from the SFT policy, or the LoRA model with its adapters off."""
    has_step = getattr(stage.tok, "has_step", None)
    trees = load_trees(path, has_step) if has_step else load_trees(path)
    if stage.in_place:
        with stage.sft.disable_adapter():
            ref = reference_steps(stage.sft.eval(), stage.tok, trees, device)
    else:
        ref = reference_steps(stage.sft, stage.tok, trees, device)
    return dataclasses.replace(stage, heldout_trees=trees, heldout_ref=ref, test_id=[], test_ood=[])
