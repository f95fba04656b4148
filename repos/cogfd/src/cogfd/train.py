"""train_and_evaluate(cfg, workdir): pretrain (or load) the model, build the graph, erase with
every method, evaluate, save the edited models. `prepare` and `run_seed` are its two halves,
shared with the benchmark; `evaluate_saved` reloads a run's models and evaluates them again."""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from . import baselines, concept_graph, data, evaluate, judge, models, text
from .config import Config, validate
from .decoupling import erase_cogfd
from .results import atomic_write_json, load_safetensors, read_json
from .runtime import RunConfig, resolve_device


@dataclasses.dataclass
class Stage:
    """Everything the erasers share: the original model, the oracle, the graph and its sets."""

    unet: Any
    text_encoder: models.TextEncoder
    oracle: judge.Oracle
    graph: dict
    erase: list[str]
    retain: list[str]
    pretrain_seconds: float
    pretrain_losses: list[float]
    judge_validation: dict[str, float] = dataclasses.field(default_factory=dict)


def _save_modules(path: Path, parts: dict[str, torch.nn.Module]) -> None:
    """The state dicts of `parts` in one safetensors file, keys "<part>.<param>" (atomic)."""
    tensors = {
        f"{prefix}.{k}": v.detach().cpu().contiguous()
        for prefix, module in parts.items()
        for k, v in module.state_dict().items()
    }
    tmp = path.with_name(f".{path.name}.tmp")
    save_file(tensors, str(tmp))
    tmp.replace(path)


def _load_modules(path: Path, parts: dict[str, torch.nn.Module]) -> None:
    """Load a file written by _save_modules; a file that is not one (truncated, from another
    preset or an older version) is a one-line ValueError naming it."""
    try:
        tensors = load_file(str(path))
        for prefix, module in parts.items():
            n = len(prefix) + 1
            state = {k[n:]: v for k, v in tensors.items() if k.startswith(prefix + ".")}
            module.load_state_dict(state)
    except (OSError, RuntimeError, ValueError, SafetensorError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"{path} is not a checkpoint of this preset ({first[:120]}); "
            "delete it or run without --resume"
        ) from exc


def load_base(cfg: Config, path: Path) -> tuple[Any, models.TextEncoder, judge.Oracle]:
    """The pretrained UNet, text encoder and judge of base.safetensors, frozen."""
    if not path.is_file():
        raise ValueError(f"{path}: no such base checkpoint; run `cogfd train` first")
    unet = models.make_unet(cfg.image_size, cfg.widths)
    text_encoder, oracle = text.tiny_text_encoder(), judge.Oracle()
    _load_modules(path, {"unet": unet, "text": text_encoder, "oracle": oracle})
    for m in (unet, text_encoder, oracle):
        m.eval().requires_grad_(False)
    return unet, text_encoder, oracle


def load_graph(cfg: Config) -> dict:
    """The concept logic graph: built by a local LLM (cfg.graph_llm), read from a JSON file in
    the official shape (cfg.graph_json), or built by the deterministic ontology."""
    if cfg.graph_llm:
        builder = concept_graph.llm_builder(concept_graph.local_llm(cfg.graph_llm))
        return concept_graph.build_graph(cfg.combination, cfg.theme, cfg.graph_iterations, builder)
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


def check_world(cfg: Config, erase: list[str], retain: list[str]) -> None:
    """ValueError naming the value when the combination, its graph or the anchor cannot be run
    in this world: a word outside the vocabulary, a combination without a colour and a shape,
    or an anchor (CA's target, UCE's target) that is the combination itself or a different
    token length (UCE maps token rows one to one)."""
    for prompt in erase + retain:
        data.parse_prompt(prompt)  # every graph prompt must be expressible in this world
    evaluate.eval_prompts(cfg.combination, erase)
    anchor = data.expected_classes(cfg.ca_anchor)
    if None in anchor:
        raise ValueError(f"ca_anchor {cfg.ca_anchor!r} must name a colour and a shape")
    if anchor == data.expected_classes(cfg.combination) and ({"ca", "uce"} & set(cfg.methods)):
        raise ValueError(
            f"ca_anchor {cfg.ca_anchor!r} shows the combination {cfg.combination!r} itself; "
            "pass another --ca-anchor (e.g. one that changes the colour)"
        )
    if "uce" in cfg.methods and len(cfg.ca_anchor.split()) != len(cfg.combination.split()):
        raise ValueError(
            f"ca_anchor {cfg.ca_anchor!r} and combination {cfg.combination!r} must have the "
            "same number of words (UCE maps token rows one to one)"
        )


def prepare(cfg: Config, workdir: Path) -> Stage:
    """Pretrain the text-to-image model (or reuse base.safetensors with --resume), the oracle,
    and the graph. The base model is seeded with cfg.base_seed, not cfg.seed."""
    graph = load_graph(cfg)
    erase, retain = concept_graph.extract_sets(graph)
    check_world(cfg, erase, retain)  # one-line errors before the minutes of pretraining
    ckpt = workdir / "base.safetensors"
    start = time.perf_counter()
    losses: list[float] = []
    if cfg.resume and ckpt.exists():
        unet, text_encoder, oracle = load_base(cfg, ckpt)
    else:
        if cfg.base_checkpoint:
            raise ValueError(
                "base_checkpoint works with `cogfd train` (it erases the pipeline and saves it); "
                "the benchmark's judge only knows the procedural world"
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
        oracle = train_judge(unet, text_encoder, cfg)
        _save_modules(ckpt, {"unet": unet, "text": text_encoder, "oracle": oracle})
    unet.to(cfg.device)
    text_encoder.to(cfg.device)
    seconds = time.perf_counter() - start
    checks = judge.validate_judge(
        oracle, unet, text_encoder, cfg.image_size, cfg.ddim_steps, cfg.guidance, cfg.base_seed
    )
    return Stage(unet, text_encoder, oracle, graph, erase, retain, seconds, losses, checks)


JUDGE_TRAIN_T = (200, 300, 400, 500)
"""SDEdit noise levels of the generated images the judge trains on (validation: SDEDIT_T)."""


def train_judge(unet, text_encoder, cfg: Config) -> judge.Oracle:
    """The judge, trained on degraded renders, nothing-images and 1024 SDEdit images of the
    original model (seeds disjoint from the validation images)."""
    parts = [
        judge.generated_validation_set(
            unet,
            text_encoder,
            256,
            cfg.image_size,
            cfg.ddim_steps,
            cfg.guidance,
            t0,
            cfg.base_seed + 9000 + t0,
        )
        for t0 in JUDGE_TRAIN_T
    ]
    pool = tuple(torch.cat([p[i] for p in parts]) for i in range(3))
    return judge.train_oracle(cfg.image_size, cfg.oracle_steps, 64, cfg.base_seed, pool)


def images_of(stage: Stage, prompt: str, n: int, cfg: Config, gen: torch.Generator):
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


ESD_BATCH = 8
"""Images per ESD-x step (the official code uses 1; 8 lowers the variance of the tiny world)."""

ESCAPE_LE = 1e-3
"""L_e above which CoGFD counts as having left the zero-gradient start (diagnostics only)."""


def erase_with(
    name: str, stage: Stage, cfg: Config, gen: torch.Generator, images: torch.Tensor | None = None
) -> tuple[Any, dict[str, float]]:
    """Run one eraser; returns the edited UNet (the original for "original") and, for the CoGFD
    variants, diagnostics of the run. `images` replaces CoGFD's training images (the swap
    experiment) after the same draws from `gen` as without it."""
    x = cfg.combination
    common = {"steps": cfg.erase_steps, "lr": cfg.erase_lr, "gen": gen, "quiet": cfg.quiet}
    if name == "original":
        return stage.unet, {}
    if name in ("cogfd", "cogfd_nograph", "cogfd_noerase"):
        erase, retain = stage.erase, stage.retain
        if name == "cogfd_nograph":  # no LLM expansion: X and its literal parts only
            erase, retain = [x], x.split()
        own = images_of(stage, x, cfg.n_train_images, cfg, gen)
        images = own if images is None else images
        unet, _, curve = erase_cogfd(
            stage.unet,
            stage.text_encoder,
            images,
            erase,
            retain,
            batch=cfg.erase_batch,
            t_window=(cfg.t_start, cfg.t_end),
            erase_weight=0.0 if name == "cogfd_noerase" else cfg.erase_weight,
            **common,
        )
        escaped = [i for i, v in enumerate(curve) if v > ESCAPE_LE]
        return unet, {
            "le_final": curve[-1],
            "le_step10": curve[min(10, len(curve) - 1)],
            "escape_step": float(escaped[0] if escaped else len(curve)),
            "train_images_combo_rate": evaluate.combination_rate(stage.oracle, images, x),
        }
    # ESD is on-policy: it samples its own x_t, so `shape` only gives the batch and image size
    shape = torch.zeros(ESD_BATCH, 3, cfg.image_size, cfg.image_size)
    esd = {"eta": cfg.esd_eta, "ddim_steps": cfg.ddim_steps, "guidance": cfg.guidance}
    if name == "esd_x":
        edited = baselines.esd_x(stage.unet, stage.text_encoder, shape, x, **esd, **common)
        return edited[0], {}
    if name == "naive":
        parts = x.split()
        edited = baselines.naive(
            stage.unet, stage.text_encoder, [shape] * len(parts), parts, **esd, **common
        )
        return edited[0], {}
    if name == "ca":
        images = images_of(stage, cfg.ca_anchor, 8, cfg, gen)
        edited = baselines.concept_ablation(
            stage.unet, stage.text_encoder, images, x, cfg.ca_anchor, **common
        )
        return edited[0], {}
    if name == "uce":
        edited = baselines.uce(
            stage.unet,
            stage.text_encoder,
            x,
            cfg.ca_anchor,
            x.split(),
            cfg.uce_lambda,
            cfg.uce_preserve_scale,
        )
        return edited, {}
    raise ValueError(f"unknown method {name!r}")


def method_generator(name: str, seed: int) -> torch.Generator:
    """The generator of one method at one seed (fixed per method name, so a subset of methods
    gives the same numbers as the full run)."""
    from .config import METHODS

    torch.manual_seed(seed * 100 + METHODS.index(name))
    return torch.Generator().manual_seed(seed * 100 + METHODS.index(name))


def run_method(
    name: str, stage: Stage, cfg: Config, seed: int, orig: dict | None = None
) -> tuple[Any, dict[str, float]]:
    """Erase with one method at `seed`, evaluate it; relative metrics when `orig` is given."""
    groups = evaluate.eval_prompts(cfg.combination, stage.erase)
    gen = method_generator(name, seed)
    start = time.perf_counter()
    unet, info = erase_with(name, stage, cfg, gen)
    seconds = time.perf_counter() - start
    m = evaluate.evaluate_model(
        unet, stage.text_encoder, stage.oracle, groups, cfg, seed, cfg.combination
    )
    m["erase_seconds"] = seconds
    m.update(info)
    if orig is not None:
        m.update(evaluate.relative_to_original(m, orig))
    return unet, m


def run_seed(
    stage: Stage,
    cfg: Config,
    seed: int,
    keep: dict | None = None,
    tuned: dict[str, dict[str, float]] | None = None,
) -> dict[str, dict[str, float]]:
    """Erase with every method in cfg.methods at `seed` and evaluate; per-method metrics.
    `tuned` maps a method to its Config overrides (its chosen learning rate); edited UNets are
    stored in `keep` (method -> UNet) when a dict is given."""
    tuned = tuned or {}
    results: dict[str, dict[str, float]] = {}
    for name in cfg.methods:
        method_cfg = dataclasses.replace(cfg, **tuned.get(name, {}))
        unet, results[name] = run_method(name, stage, method_cfg, seed)
        if keep is not None:
            keep[name] = unet
    for name in cfg.methods:
        results[name].update(evaluate.relative_to_original(results[name], results["original"]))
    return results


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """One seed, every method; flat metrics "<method>/<metric>". Writes config.json first, then
    base.safetensors (the pretrained model and judge), erased.safetensors (every edited UNet,
    keys "<method>.<param>") and metrics.json."""
    validate(cfg)
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    torch.set_num_threads(cfg.threads)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    if cfg.base_checkpoint:  # a local StableDiffusionPipeline folder: erase it with CoGFD
        from . import sd

        sd.check_folder(cfg.base_checkpoint)
        erase, retain = concept_graph.extract_sets(load_graph(cfg))
        return sd.erase_pipeline(cfg, erase, retain, workdir)
    stage = prepare(cfg, workdir)
    edited: dict[str, Any] = {}
    per_method = run_seed(stage, cfg, cfg.seed, keep=edited)
    _save_modules(workdir / ERASED, {m: unet for m, unet in edited.items() if m != "original"})
    metrics = {f"{m}/{k}": v for m, d in per_method.items() for k, v in d.items()}
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


ERASED = "erased.safetensors"
RERUN_ONLY = ("erase_seconds", "samples_per_second", "le_final", "le_step10", "escape_step")
RERUN_ONLY += ("train_images_combo_rate",)
"""Metrics of the erasure run itself (timings, CoGFD's optimisation diagnostics), which `eval`
cannot recompute from the saved models; every other metric it reproduces."""


def run_config(cfg: Config, workdir: Path) -> Config:
    """The Config a run in workdir was trained with (its config.json); the device, threads, quiet
    flag and paths come from `cfg` (where this evaluation runs)."""
    saved = read_json(workdir / "config.json", "run config")
    if not isinstance(saved, dict):
        raise ValueError(f"{workdir / 'config.json'}: expected a JSON object")  # noqa: TRY004
    plumbing = {f.name for f in dataclasses.fields(RunConfig)} - {"name", "seed"}
    fields = {f.name for f in dataclasses.fields(Config)} - plumbing - {"threads"}
    try:
        run_cfg = dataclasses.replace(
            cfg,
            **{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k in fields},
        )
        return validate(run_cfg)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{workdir / 'config.json'}: not a config of this version ({exc})"
        ) from None


def evaluate_saved(cfg: Config, workdir: str | Path) -> dict[str, Any]:
    """Reload the models a previous `train` saved in workdir and evaluate them again with the
    run's own settings and seed: flat metrics "<method>/<metric>" (RERUN_ONLY keys aside, these
    equal train's), or, for a run that erased a StableDiffusionPipeline, the edited pipeline
    reloaded and its record."""
    workdir = Path(workdir)
    run_cfg = run_config(cfg, workdir)
    run_cfg = dataclasses.replace(run_cfg, device=resolve_device(run_cfg.device))
    torch.set_num_threads(cfg.threads)
    if run_cfg.base_checkpoint:
        from . import sd

        sd.load_pipeline(workdir / "pipeline")  # ValueError naming the folder if it is broken
        return {**read_json(workdir / "metrics.json", "run record"), "pipeline_reloaded": True}
    base, text_encoder, oracle = load_base(run_cfg, workdir / "base.safetensors")
    erase, _ = concept_graph.extract_sets(load_graph(run_cfg))
    groups = evaluate.eval_prompts(run_cfg.combination, erase)
    tensors = load_safetensors(workdir / ERASED)
    per_method: dict[str, dict[str, float]] = {}
    for name in run_cfg.methods:
        unet = base
        if name != "original":
            unet = copy.deepcopy(base)
            state = {k[len(name) + 1 :]: v for k, v in tensors.items() if k.startswith(name + ".")}
            try:
                unet.load_state_dict(state)
            except RuntimeError as exc:
                first = str(exc).strip().splitlines()[0][:120]
                raise ValueError(
                    f"{workdir / ERASED}: no complete {name} model ({first})"
                ) from None
        per_method[name] = evaluate.evaluate_model(
            unet.to(run_cfg.device),
            text_encoder.to(run_cfg.device),
            oracle,
            groups,
            run_cfg,
            run_cfg.seed,
            run_cfg.combination,
        )
    for name in run_cfg.methods:
        per_method[name].update(
            evaluate.relative_to_original(per_method[name], per_method["original"])
        )
    return {f"{m}/{k}": v for m, d in per_method.items() for k, v in d.items()}
