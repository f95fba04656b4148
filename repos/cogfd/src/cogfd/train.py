"""train_and_evaluate(cfg, workdir): pretrain (or load) the model, build the graph, erase with
every method, evaluate. `prepare` and `run_seed` are its two halves, shared with the benchmark."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from . import baselines, concept_graph, data, evaluate, models
from .config import Config, validate
from .decoupling import erase_cogfd
from .results import atomic_write_json


@dataclasses.dataclass
class Stage:
    """Everything the erasers share: the original model, the oracle, the graph and its sets."""

    unet: Any
    text_encoder: models.TextEncoder
    oracle: models.Oracle
    graph: dict
    erase: list[str]
    retain: list[str]
    pretrain_seconds: float
    pretrain_losses: list[float]
    oracle_accuracy: tuple[float, float] = (0.0, 0.0)


def _save_base(path: Path, stage_parts: dict[str, torch.nn.Module]) -> None:
    tensors = {
        f"{prefix}.{k}": v.detach().cpu().contiguous()
        for prefix, module in stage_parts.items()
        for k, v in module.state_dict().items()
    }
    tmp = path.with_name(f".{path.name}.tmp")
    save_file(tensors, str(tmp))
    tmp.replace(path)


def _load_base(path: Path, parts: dict[str, torch.nn.Module]) -> None:
    tensors = load_file(str(path))
    for prefix, module in parts.items():
        n = len(prefix) + 1
        module.load_state_dict({k[n:]: v for k, v in tensors.items() if k.startswith(prefix + ".")})


def load_graph(cfg: Config) -> dict:
    """The concept logic graph: a JSON file when cfg.graph_json is set, else the ontology."""
    if cfg.graph_json:
        path = Path(cfg.graph_json)
        if not path.exists():
            raise ValueError(f"graph_json {path} does not exist")
        try:
            graph = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise concept_graph.GraphSchemaError(f"{path} is not valid JSON ({exc})") from exc
        return concept_graph.validate_graph(graph)
    return concept_graph.build_graph(
        cfg.combination, cfg.theme, cfg.graph_iterations, concept_graph.ontology_graph
    )


def prepare(cfg: Config, workdir: Path) -> Stage:
    """Pretrain the text-to-image model (or reuse base.safetensors with --resume), the oracle,
    and the graph. The base model is seeded with cfg.base_seed, not cfg.seed."""
    graph = load_graph(cfg)
    erase, retain = concept_graph.extract_sets(graph)
    for prompt in erase + retain:
        data.parse_prompt(prompt)  # every graph prompt must be expressible in this world
    ckpt = workdir / "base.safetensors"
    start = time.perf_counter()
    losses: list[float] = []
    if cfg.resume and ckpt.exists():
        unet = models.make_unet(cfg.image_size, cfg.widths)
        text_encoder, oracle = models.TextEncoder(), models.Oracle()
        _load_base(ckpt, {"unet": unet, "text": text_encoder, "oracle": oracle})
        for m in (unet, text_encoder, oracle):
            m.eval().requires_grad_(False)
    else:
        if cfg.base_checkpoint:
            raise ValueError(
                "base_checkpoint: erasing a local SD UNet needs its CLIP text encoder and VAE, "
                "which this CPU build does not wire in; see README 'Scaling up'"
            )
        unet, text_encoder, losses = models.pretrain(
            cfg.image_size,
            cfg.pretrain_steps,
            cfg.pretrain_batch,
            cfg.pretrain_lr,
            cfg.base_seed,
            cfg.widths,
            quiet=cfg.quiet,
            device=cfg.device,
        )
        oracle = models.train_oracle(cfg.image_size, cfg.oracle_steps, 64, cfg.base_seed)
        _save_base(ckpt, {"unet": unet, "text": text_encoder, "oracle": oracle})
    unet.to(cfg.device)
    text_encoder.to(cfg.device)
    seconds = time.perf_counter() - start
    accuracy = oracle_accuracy(oracle, cfg.image_size, cfg.base_seed)
    return Stage(unet, text_encoder, oracle, graph, erase, retain, seconds, losses, accuracy)


@torch.no_grad()
def oracle_accuracy(oracle: models.Oracle, size: int, seed: int, n: int = 512) -> tuple[float, ...]:
    """Colour and shape accuracy (%) of the oracle on fresh renders of random prompts."""
    gen = torch.Generator().manual_seed(seed + 77)
    x, c, s = data.render_batch(data.random_prompts(n, gen, p_empty=0.0), size, gen)
    lc, ls = oracle(x)
    return 100 * float((lc.argmax(-1) == c).float().mean()), 100 * float(
        (ls.argmax(-1) == s).float().mean()
    )


def _images_of(stage: Stage, prompt: str, n: int, cfg: Config, gen: torch.Generator):
    """Images of `prompt` from the original model (the paper's img_prepare.py)."""
    return models.sample(
        stage.unet,
        stage.text_encoder,
        [prompt] * n,
        cfg.image_size,
        cfg.ddim_steps,
        cfg.guidance,
        gen,
    )


def erase_with(name: str, stage: Stage, cfg: Config, gen: torch.Generator):
    """Run one eraser; returns the edited UNet (the original for "original")."""
    x = cfg.combination
    common = {"steps": cfg.erase_steps, "lr": cfg.erase_lr, "gen": gen, "quiet": cfg.quiet}
    if name == "original":
        return stage.unet
    if name in ("cogfd", "cogfd_nograph"):
        erase, retain = stage.erase, stage.retain
        if name == "cogfd_nograph":  # no LLM expansion: X and its literal parts only
            erase, retain = [x], x.split()
        images = _images_of(stage, x, cfg.n_train_images, cfg, gen)
        return erase_cogfd(
            stage.unet,
            stage.text_encoder,
            images,
            erase,
            retain,
            batch=cfg.erase_batch,
            t_window=(cfg.t_start, cfg.t_end),
            erase_weight=cfg.erase_weight,
            **common,
        )[0]
    if name == "esd_x":
        images = _images_of(stage, x, 8, cfg, gen)
        return baselines.esd_x(
            stage.unet, stage.text_encoder, images, x, eta=cfg.esd_eta, **common
        )[0]
    if name == "naive":
        parts = x.split()
        images = [_images_of(stage, p, 8, cfg, gen) for p in parts]
        return baselines.naive(
            stage.unet, stage.text_encoder, images, parts, eta=cfg.esd_eta, **common
        )[0]
    if name == "ca":
        images = _images_of(stage, cfg.ca_anchor, 8, cfg, gen)
        return baselines.concept_ablation(
            stage.unet, stage.text_encoder, images, x, cfg.ca_anchor, **common
        )[0]
    if name == "uce":
        return baselines.uce(
            stage.unet, stage.text_encoder, x, cfg.ca_anchor, x.split(), cfg.uce_lambda
        )
    raise ValueError(f"unknown method {name!r}")


def run_seed(
    stage: Stage, cfg: Config, seed: int, keep: dict | None = None
) -> dict[str, dict[str, float]]:
    """Erase with every method in cfg.methods at `seed` and evaluate; per-method metrics.
    Edited UNets are stored in `keep` (method -> UNet) when a dict is given."""
    groups = evaluate.eval_prompts(cfg.combination, stage.erase)
    results: dict[str, dict[str, float]] = {}
    for i, name in enumerate(cfg.methods):
        torch.manual_seed(seed * 100 + i)
        gen = torch.Generator().manual_seed(seed * 100 + i)
        start = time.perf_counter()
        unet = erase_with(name, stage, cfg, gen)
        seconds = time.perf_counter() - start
        m = evaluate.evaluate_model(
            unet, stage.text_encoder, stage.oracle, groups, cfg, seed, cfg.combination
        )
        m["erase_seconds"] = seconds
        results[name] = m
        if keep is not None:
            keep[name] = unet
    for name in cfg.methods:
        results[name].update(evaluate.relative_to_original(results[name], results["original"]))
    return results


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """One seed, every method; flat metrics "<method>/<metric>". Writes config.json first."""
    validate(cfg)
    torch.set_num_threads(cfg.threads)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    stage = prepare(cfg, workdir)
    per_method = run_seed(stage, cfg, cfg.seed)
    metrics = {f"{m}/{k}": v for m, d in per_method.items() for k, v in d.items()}
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate_run(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
