"""train_and_evaluate(cfg, workdir, which) -> metrics: the one entry point every command uses."""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from . import ranking, sequence
from .baselines import PoseCNN, pose_cnn_loss
from .config import METHODS, Config, validate
from .data import Pairs, make_pairs
from .geometry import camera_centre, rays_to_camera
from .metrics import image_metrics, pose_metrics
from .model import GST, SEG_CAMERA, SEG_TARGET
from .results import atomic_write_json, load_safetensors, read_config, save_safetensors
from .runtime import resolve_device
from .tokenizers import KMeansTokenizer, Vocab, VQTokenizer
from .views import load_eval_pairs, load_pairs

CHECKPOINT = "model.safetensors"


@dataclasses.dataclass
class Prepared:
    """Rendered pairs, fitted tokenizers and the codes of every segment."""

    train: Pairs
    test: Pairs
    image_tok: KMeansTokenizer | VQTokenizer
    camera_tok: KMeansTokenizer | VQTokenizer
    vocab: Vocab
    codes: dict[str, dict[str, torch.Tensor]]  # split -> {"obs", "cam", "tgt"} (N, grid^2)


def _split(p: Pairs, sl: slice) -> Pairs:
    return Pairs(*(getattr(p, f.name)[sl] for f in dataclasses.fields(Pairs)))


def _make_tokenizer(cfg: Config, channels: int, n_codes: int):
    if cfg.tokenizer == "kmeans":
        return KMeansTokenizer(cfg.image_size, cfg.image_size // cfg.grid, channels, n_codes)
    return VQTokenizer(
        cfg.image_size, cfg.grid, channels, n_codes, steps=cfg.vq_steps, device=cfg.device
    )


@functools.lru_cache(maxsize=2)
def _prepare(
    seed,
    data_dir,
    camera_convention,
    image_size,
    n_objects,
    azimuths,
    elevations,
    holdout,
    n_train,
    n_test,
    tokenizer,
    grid,
    image_codes,
    camera_codes,
    vq_steps,
    device,
) -> Prepared:
    cfg = Config(
        seed=seed,
        image_size=image_size,
        n_objects=n_objects,
        n_train=n_train,
        n_test=n_test,
        tokenizer=tokenizer,
        grid=grid,
        image_codes=image_codes,
        camera_codes=camera_codes,
        vq_steps=vq_steps,
        device=device,
    )
    if data_dir:  # the paper's kind of data: posed views of objects; test objects held out
        pairs = load_pairs(data_dir, n_train, n_test, image_size, seed, camera_convention)
    else:
        pairs = make_pairs(
            n_train + n_test, image_size, n_objects, seed, azimuths, elevations, holdout, n_test
        )
    train, test = _split(pairs, slice(0, n_train)), _split(pairs, slice(n_train, None))
    image_tok = _make_tokenizer(cfg, 3, image_codes).fit(
        np.concatenate([train.obs, train.tgt]), seed
    )
    camera_tok = _make_tokenizer(cfg, 6, camera_codes).fit(train.rays, seed)
    codes = {
        name: {
            "obs": torch.from_numpy(image_tok.encode(p.obs)),
            "cam": torch.from_numpy(camera_tok.encode(p.rays)),
            "tgt": torch.from_numpy(image_tok.encode(p.tgt)),
        }
        for name, p in (("train", train), ("test", test))
    }
    return Prepared(train, test, image_tok, camera_tok, Vocab(image_codes, camera_codes), codes)


def prepare(cfg: Config) -> Prepared:
    """Data and tokenizers for cfg.seed (cached: every method of a seed sees the same ones)."""
    return _prepare(
        cfg.seed,
        cfg.data_dir,
        cfg.camera_convention,
        cfg.image_size,
        cfg.n_objects,
        cfg.azimuths,
        cfg.elevations,
        cfg.holdout,
        cfg.n_train,
        cfg.n_test,
        cfg.tokenizer,
        cfg.grid,
        cfg.image_codes,
        cfg.camera_codes,
        cfg.vq_steps,
        cfg.device,
    )


def build_model(cfg: Config, vocab: Vocab) -> GST:
    return GST(vocab.size, cfg.width, cfg.depth, cfg.heads, cfg.grid, cfg.dropout, cfg.qk_norm)


def steps_for(cfg: Config, method: str) -> int:
    """Equal steps per task: a method that trains one order per step gets cfg.steps steps per
    order, so the alternating joint model (GEN and EST orders on alternate steps) gets twice as
    many as the single-task models and the GEN-only joint model (both tasks in every step)."""
    return cfg.steps * len(sequence.TRAINED.get(method, ("cnn",)))


def lr_at(step: int, cfg: Config, total: int | None = None) -> float:
    """Linear warm-up then cosine decay to 10% of the peak over `total` steps (cfg.steps)."""
    total = cfg.steps if total is None else total
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    frac = (step - cfg.warmup) / max(1, total - cfg.warmup)
    return cfg.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))


def _progress(cfg: Config, desc: str, total: int):
    return tqdm(range(total), desc=desc, disable=cfg.quiet or not sys.stderr.isatty(), leave=False)


def ar_loss(model: GST, prep: Prepared, idx: torch.Tensor, method: str, step: int, device):
    """Loss of one step. The alternating joint model (gst) switches order every step; the
    GEN-only joint model (gst_gen) trains both segments of the one GEN sequence every step."""
    orders = sequence.TRAINED[method]
    order = list(orders)[step % len(orders)]
    c = prep.codes["train"]
    tokens, seg = sequence.build(prep.vocab, c["obs"][idx], c["cam"][idx], c["tgt"][idx], order)
    tokens, seg = tokens.to(device), seg.to(device)
    first = sequence.first_trained_position(seg, orders[order])
    logits = model(tokens, seg, logits_from=first)
    losses = sequence.segment_losses(logits, tokens, seg, c["obs"].shape[1], first)
    return sum(losses[k] for k in orders[order]) / len(orders[order])


def train_ar(cfg: Config, prep: Prepared, method: str) -> GST:
    torch.manual_seed(cfg.seed)
    model = build_model(cfg, prep.vocab).to(cfg.device)
    opt = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95)
    )
    g = torch.Generator().manual_seed(cfg.seed)
    model.train()
    total = steps_for(cfg, method)
    bar = _progress(cfg, method, total)
    for step in bar:
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg, total)
        idx = torch.randint(0, cfg.n_train, (cfg.batch,), generator=g)
        loss = ar_loss(model, prep, idx, method, step, cfg.device)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
    return model.eval()


@torch.no_grad()
def eval_ar(cfg: Config, prep: Prepared, model: GST, method: str) -> dict[str, float]:
    """Sampled novel views (GEN order), sampled cameras (EST order), cameras ranked by
    likelihood among training cameras (every method that models the camera), and the
    teacher-forced perplexity of each trained segment on the test pairs."""
    c, test, vocab = prep.codes["test"], prep.test, prep.vocab
    n = c["obs"].shape[1]
    g = torch.Generator().manual_seed(cfg.seed + 7919)
    out: dict[str, float] = {}
    trained = sequence.TRAINED[method]
    for order, segments in trained.items():
        tokens, seg = sequence.build(vocab, c["obs"], c["cam"], c["tgt"], order)
        tokens, seg = tokens.to(cfg.device), seg.to(cfg.device)
        losses = sequence.segment_losses(model(tokens, seg), tokens, seg, n)
        task = "image" if order == "gen" else "camera"
        out[f"ppl_{task}"] = float(torch.exp(losses[task]))
        if order == "gen" and "camera" in segments:  # p(c | o): the prior, not localisation
            out["ppl_camera_prior"] = float(torch.exp(losses["camera"]))
        kind, seg_id = ("image", SEG_TARGET) if order == "gen" else ("camera", SEG_CAMERA)
        new = model.sample(
            tokens[:, : 2 * n + 1],
            seg[:, : 2 * n + 1],
            n,
            seg_id,
            vocab.slot_mask(kind).to(cfg.device),
            g.manual_seed(cfg.seed + 1),
            cfg.temperature,
            cfg.top_k,
        )
        ids = vocab.from_vocab(new.cpu(), kind).numpy()
        if order == "gen":
            out.update(image_metrics(prep.image_tok.decode(ids), test.tgt))
        else:
            rays = prep.camera_tok.decode(ids).astype(np.float64)
            out.update(pose_metrics(*rays_to_camera(rays), test.rotation, test.translation))
    rank_order = ranking.ORDER.get(method)
    if rank_order and cfg.pose_candidates:
        out.update(ranking.rank_pose_metrics(cfg, prep, model, rank_order))
    return out


def _images(p: Pairs, device) -> tuple[torch.Tensor, torch.Tensor]:
    return (
        torch.from_numpy(p.obs).permute(0, 3, 1, 2).to(device),
        torch.from_numpy(p.tgt).permute(0, 3, 1, 2).to(device),
    )


def train_cnn(cfg: Config, prep: Prepared) -> PoseCNN:
    torch.manual_seed(cfg.seed)
    model = PoseCNN(cfg.cnn_width).to(cfg.device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    obs, tgt = _images(prep.train, cfg.device)
    r = torch.from_numpy(prep.train.rotation).float().to(cfg.device)
    centre = torch.from_numpy(camera_centre(prep.train.rotation, prep.train.translation))
    centre = centre.float().to(cfg.device)
    g = torch.Generator().manual_seed(cfg.seed)
    bar = _progress(cfg, "cnn_pose", cfg.steps)
    for step in bar:
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        idx = torch.randint(0, cfg.n_train, (cfg.batch,), generator=g).to(cfg.device)
        loss = pose_cnn_loss(model, obs[idx], tgt[idx], r[idx], centre[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
    return model.eval()


@torch.no_grad()
def eval_cnn(cfg: Config, prep: Prepared, model: PoseCNN) -> dict[str, float]:
    obs, tgt = _images(prep.test, cfg.device)
    r, centre = model(obs, tgt)
    r = r.double().cpu().numpy()
    t = -np.einsum("nij,nj->ni", r, centre.double().cpu().numpy())
    return pose_metrics(r, t, prep.test.rotation, prep.test.translation)


def new_model(cfg: Config, prep: Prepared, which: str) -> torch.nn.Module:
    if which == "cnn_pose":
        return PoseCNN(cfg.cnn_width).to(cfg.device)
    return build_model(cfg, prep.vocab).to(cfg.device)


def load_model(
    cfg: Config, prep: Prepared, which: str, state: dict[str, torch.Tensor], path: Path
) -> torch.nn.Module:
    """`which`'s model with the weights `state` read from `path` (named in every error)."""
    model = new_model(cfg, prep, which)
    try:
        model.load_state_dict({k: v.to(cfg.device) for k, v in state.items()})
    except RuntimeError as exc:  # missing / unexpected keys or wrong shapes
        first = str(exc).strip().splitlines()[0]
        raise ValueError(
            f"{path}: does not fit the {which} model of this config ({first})"
        ) from None
    return model.eval()


def measure(cfg: Config, prep: Prepared, model: torch.nn.Module, which: str) -> dict[str, float]:
    """The test metrics of a trained model (eval_cnn or eval_ar)."""
    if which == "cnn_pose":
        return eval_cnn(cfg, prep, model)
    return eval_ar(cfg, prep, model, which)


def train_and_evaluate(cfg: Config, workdir: str | Path, which: str = "gst") -> dict[str, float]:
    """Train one method for cfg.seed and return its test metrics; writes workdir/config.json
    first, then model.safetensors and metrics.json. With cfg.resume and a checkpoint in
    workdir, that model is evaluated instead of training a new one."""
    validate(cfg)
    if which not in METHODS:
        raise ValueError(f"unknown method {which!r}; expected one of {METHODS}")
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    torch.set_num_threads(cfg.threads)
    workdir = Path(workdir)
    ckpt = workdir / CHECKPOINT
    saved = load_safetensors(ckpt) if cfg.resume and ckpt.exists() else None  # fail early
    workdir.mkdir(parents=True, exist_ok=True)
    # the run's own method is the one entry of `methods` in its config.json
    atomic_write_json(
        workdir / "config.json", dataclasses.asdict(dataclasses.replace(cfg, methods=(which,)))
    )
    prep = prepare(cfg)
    if saved is not None:
        model = load_model(cfg, prep, which, saved, ckpt)
    else:
        model = train_cnn(cfg, prep) if which == "cnn_pose" else train_ar(cfg, prep, which)
        save_safetensors(ckpt, model.state_dict())
    metrics = measure(cfg, prep, model, which)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def run_config(path: Path) -> tuple[Config, str]:
    """(the Config, the method) of a `train` run's config.json (ValueErrors name the file)."""
    run = read_config(path, Config, validate)
    if len(run.methods) != 1:
        raise ValueError(f"{path}: names methods {run.methods}, a train run has exactly one")
    return run, run.methods[0]


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Reload the model a previous `train` saved in workdir and evaluate it again: data and
    tokenizers are rebuilt from the run's config.json (deterministic in the seed), the weights
    come from model.safetensors. Device, threads and progress come from `cfg`; a --data-dir
    other than the run's evaluates on that folder's views instead (on_user_views)."""
    workdir = Path(workdir)
    run, which = run_config(workdir / "config.json")
    run = dataclasses.replace(
        run, device=resolve_device(cfg.device), threads=cfg.threads, quiet=cfg.quiet
    )
    state = load_safetensors(workdir / CHECKPOINT)  # read first: a bad file fails before work
    torch.set_num_threads(run.threads)
    prep = prepare(run)
    if cfg.data_dir and cfg.data_dir != run.data_dir:  # a user's views, the run's tokenizers
        prep = on_user_views(run, prep, cfg)
    return measure(run, prep, load_model(run, prep, which, state, workdir / CHECKPOINT), which)


def on_user_views(run: Config, prep: Prepared, cfg: Config) -> Prepared:
    """`prep` with its test pairs replaced by n_test pairs of the folder cfg.data_dir (every
    object; read at the run's image size in cfg.camera_convention), encoded by the run's own
    tokenizers; the training pairs (floors, ranking candidates) stay the run's."""
    user = load_eval_pairs(
        cfg.data_dir, run.n_test, run.image_size, run.seed, cfg.camera_convention
    )
    codes = {
        "obs": torch.from_numpy(prep.image_tok.encode(user.obs)),
        "cam": torch.from_numpy(prep.camera_tok.encode(user.rays)),
        "tgt": torch.from_numpy(prep.image_tok.encode(user.tgt)),
    }
    return dataclasses.replace(prep, test=user, codes={"train": prep.codes["train"], "test": codes})


def evaluate_runs(cfg: Config, out: str | Path) -> dict[str, dict[str, float]]:
    """evaluate() for one run folder (it holds config.json), or for every method folder
    out/<method>/ of cfg.methods that `gst train --out OUT` wrote."""
    out = Path(out)
    if (out / "config.json").exists():
        return {run_config(out / "config.json")[1]: evaluate(cfg, out)}
    found = [m for m in cfg.methods if (out / m).is_dir()]
    if not found:
        raise ValueError(
            f"{out}: holds no run of {list(cfg.methods)} (config.json, or <method>/ folders "
            f"from `gst train --out {out}`)"
        )
    return {m: evaluate(cfg, out / m) for m in found}
