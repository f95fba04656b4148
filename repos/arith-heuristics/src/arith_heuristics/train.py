"""train_and_evaluate(cfg, workdir) -> metrics: train the toy LM, then run the whole analysis;
evaluate(cfg, workdir): reload the final checkpoint a run saved and score it again."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import analysis as A
from . import circuit as C
from .config import OPERATORS, Config, validate
from .data import Vocab, all_legal, split
from .lm import accuracy, checkpoint_steps, load_state, train
from .model import build_model, load_checkpoint, locate
from .probes import probe_grid
from .results import atomic_write_json, read_json
from .runtime import progress, stage


def seed_everything(seed: int, threads: int) -> None:
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def prepare_model(cfg: Config, workdir: Path, vocab: Vocab):
    """The trained toy model and its checkpoint paths (trained now, or reused with --resume)."""
    legal = all_legal(OPERATORS, cfg.max_operand, cfg.n_numbers)
    train_set, test_set = split(legal, cfg.train_frac, cfg.seed)
    model = build_model(cfg, vocab).to(cfg.device)
    paths = [workdir / f"checkpoint_{s:06d}.safetensors" for s in checkpoint_steps(cfg)]
    if cfg.resume and all(p.exists() for p in paths):
        load_state(model, paths[-1])
    else:
        paths = train(model, train_set, vocab, cfg, workdir)
    return model.eval(), paths, train_set, test_set


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Train (or load --checkpoint), analyse every operator, write metrics.json and
    analysis.json into workdir (config.json first); return the flat metrics."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    seed_everything(cfg.seed, cfg.threads)
    vocab = Vocab(cfg.n_numbers)
    metrics: dict[str, float] = {}
    paths: list[Path] = []
    if cfg.checkpoint:
        # a local causal LM whose token ids follow Vocab (e.g. saved with save_pretrained)
        model = load_checkpoint(cfg.checkpoint, cfg.device, vocab)
        if model.config.vocab_size < vocab.size:
            raise ValueError(
                f"checkpoint vocabulary has {model.config.vocab_size} tokens; the prompts need "
                f"{vocab.size} (numbers 0..{cfg.n_numbers - 1}, 4 operators, '=', BOS)"
            )
        legal = all_legal(OPERATORS, cfg.max_operand, cfg.n_numbers)
        train_set, test_set = split(legal, cfg.train_frac, cfg.seed)
    else:
        model, paths, train_set, test_set = prepare_model(cfg, workdir, vocab)
    stage(f"seed {cfg.seed}: model ready, analysing each operator", cfg.quiet)
    for k, op in enumerate(OPERATORS):
        metrics[f"train_acc_{op}"] = accuracy(
            model, train_set.subset(train_set.ops == k), vocab, cfg.device
        )
        metrics[f"test_acc_{op}"] = accuracy(
            model, test_set.subset(test_set.ops == k), vocab, cfg.device
        )
    metrics["train_acc"] = accuracy(model, train_set, vocab, cfg.device)
    metrics["test_acc"] = accuracy(model, test_set, vocab, cfg.device)

    parts = locate(model)
    ctx = C.make_context(model, parts, vocab, cfg)
    ops = progress(list(enumerate(OPERATORS)), f"analysis (seed {cfg.seed}): operators", cfg.quiet)
    per_op = {op: A.analyse_operator(ctx, op, cfg.seed + 17 * k) for k, op in ops}
    for key in per_op["+"]["metrics"]:
        values = [per_op[op]["metrics"][key] for op in OPERATORS]
        for op, v in zip(OPERATORS, values, strict=True):
            metrics[f"{key}_{op}"] = v
        finite = [v for v in values if np.isfinite(v)]
        metrics[key] = float(np.mean(finite)) if finite else float("nan")
    for key in per_op["+"]["curves"]:
        for op in OPERATORS:
            for i, v in enumerate(per_op[op]["curves"][key]):
                metrics[f"{key}_{i}_{op}"] = float(v)
        curve = np.mean([per_op[op]["curves"][key] for op in OPERATORS], axis=0)
        for i, v in enumerate(curve):
            metrics[f"{key}_{i}"] = float(v)
    tops = [per_op[op]["top_neurons"] for op in OPERATORS]
    unique = [len(t - set().union(*(o for o in tops if o is not t))) / max(1, len(t)) for t in tops]
    metrics["unique_top_neuron_share"] = float(np.mean(unique))
    if cfg.untrained_null and not cfg.checkpoint:
        stage(f"seed {cfg.seed}: the untrained model's null", cfg.quiet)
        metrics.update(untrained_null(cfg, vocab))

    stage(f"seed {cfg.seed}: heuristics at {len(paths)} checkpoints, then probes", cfg.quiet)
    ckpt_pairs = checkpoint_pairs(cfg, vocab, paths, per_op) if paths else []
    for op in OPERATORS:
        for i, v in enumerate(overlap_curve(ckpt_pairs, ckpt_pairs, op)):
            metrics[f"overlap_ckpt_{i}_{op}"] = v
    for i in range(len(ckpt_pairs)):
        metrics[f"overlap_ckpt_{i}"] = float(
            np.mean([metrics[f"overlap_ckpt_{i}_{op}"] for op in OPERATORS])
        )

    probe_set = ctx.correct if len(ctx.correct) >= 10 else ctx.legal  # untrained: all legal
    order = np.random.default_rng(cfg.seed).permutation(len(probe_set))
    sample = probe_set.subset(order[: cfg.probe_prompts])
    grid = probe_grid(
        model,
        sample.tokens(vocab).to(cfg.device),
        sample.result,
        cfg.n_numbers,
        cfg.probe_epochs,
        cfg.seed,
    )
    metrics["probe_last_pos_final_layer"] = float(grid[-1, -1])
    metrics["probe_best_operand_pos"] = float(grid[:, :-1].max())
    extra = {
        "probe_grid": grid.tolist(),
        "faith_fracs": list(cfg.faith_fracs),
        "knockout_counts": list(cfg.knockout_counts),
        "type_counts": {op: per_op[op]["type_counts"] for op in OPERATORS},
        "head_effects": {op: per_op[op]["head_effects"] for op in OPERATORS},
        "head_sweep": {op: per_op[op]["head_sweep"] for op in OPERATORS},
        "mlp_effects": {op: per_op[op]["mlp_effects"] for op in OPERATORS},
    }
    heuristics = {
        "final": {op: sorted(map(list, per_op[op]["pairs"])) for op in OPERATORS},
        "checkpoints": [{op: sorted(map(list, c[op])) for op in OPERATORS} for c in ckpt_pairs],
    }
    metrics = {k: float(v) for k, v in metrics.items()}
    atomic_write_json(workdir / "metrics.json", metrics)
    atomic_write_json(workdir / "analysis.json", extra)
    atomic_write_json(workdir / "heuristics.json", heuristics)
    return metrics


def untrained_null(cfg: Config, vocab: Vocab) -> dict[str, float]:
    """Algorithm 1 on the top and bottom neurons of the initial (untrained) model: the same
    initialisation the trained model started from (a null for the classification claim)."""
    torch.manual_seed(cfg.seed)
    model = build_model(cfg, vocab).to(cfg.device).eval()
    ctx = C.make_context(model, locate(model), vocab, cfg, with_means=False)
    out: dict[str, float] = {}
    for k, op in enumerate(OPERATORS):
        for key, v in A.classification_null(ctx, op, cfg.seed + 17 * k).items():
            out[f"untrained_{key}_{op}"] = v
    for key in (
        "classified_share",
        "bottom_classified_share",
        "classified_share_official",
        "bottom_classified_share_official",
    ):
        out[f"untrained_{key}"] = float(np.mean([out[f"untrained_{key}_{op}"] for op in OPERATORS]))
    return out


def checkpoint_pairs(cfg: Config, vocab: Vocab, paths: list[Path], per_op: dict) -> list[dict]:
    """Per checkpoint and operator, the (layer, neuron, heuristic) pairs of its attribution-top
    neurons, on the final model's analysis prompts."""
    model = build_model(cfg, vocab).to(cfg.device)
    out = []
    for path in paths:
        load_state(model, path)
        ctx = C.make_context(model, locate(model), vocab, cfg, with_means=False)
        out.append({op: A.heuristic_pairs(ctx, op, per_op[op]["batch"]) for op in OPERATORS})
    return out


def overlap_curve(pairs: list[dict], final_of: list[dict], op: str) -> list[float]:
    """Share of the final model's pairs (final_of[-1][op]) present at each checkpoint of `pairs`
    (pairs as sets or as lists of [layer, neuron, name])."""
    if not pairs or not final_of:
        return []
    final = {tuple(p) for p in final_of[-1][op]}
    return [len({tuple(p) for p in c[op]} & final) / max(1, len(final)) for c in pairs]


def config_of_run(workdir: Path) -> Config:
    """The Config a run was trained with, from its config.json (ValueError naming the file)."""
    path = workdir / "config.json"
    saved = read_json(path, "run config")
    try:
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()}
        return validate(Config(**fields))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not an arith-heuristics run config ({exc})") from None


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, Any]:
    """Reload the model a previous `train` left in workdir (its final checkpoint, or the local
    --checkpoint folder it analysed) and score it again on the run's train and test prompts
    (the same seeded split); runs on cfg.device."""
    workdir = Path(workdir)
    run_cfg = dataclasses.replace(config_of_run(workdir), device=cfg.device, quiet=cfg.quiet)
    torch.set_num_threads(cfg.threads)
    vocab = Vocab(run_cfg.n_numbers)
    if run_cfg.checkpoint:
        source = Path(run_cfg.checkpoint)
        model = load_checkpoint(source, run_cfg.device, vocab)
    else:
        source = workdir / f"checkpoint_{checkpoint_steps(run_cfg)[-1]:06d}.safetensors"
        model = load_state(build_model(run_cfg, vocab), source).to(run_cfg.device)
    legal = all_legal(OPERATORS, run_cfg.max_operand, run_cfg.n_numbers)
    train_set, test_set = split(legal, run_cfg.train_frac, run_cfg.seed)
    out: dict[str, Any] = {"model": str(source)}
    for k, op in enumerate(OPERATORS):
        for name, prompts in (("train", train_set), ("test", test_set)):
            subset = prompts.subset(prompts.ops == k)
            out[f"{name}_acc_{op}"] = accuracy(model, subset, vocab, run_cfg.device)
    out["train_acc"] = accuracy(model, train_set, vocab, run_cfg.device)
    out["test_acc"] = accuracy(model, test_set, vocab, run_cfg.device)
    return out
