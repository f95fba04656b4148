"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through;
evaluate(cfg, workdir) reloads the model a run saved and evaluates it again.

Loss (paper, method section): L1 on the standardised label (+ force L1 on MD-like data) plus
aux_weight x the auxiliary task of the arm (EMPP, EMPP without label, denoising, element
masking); "supervised" and "schnet" have no auxiliary task. Heads are unused at inference.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from . import data
from .baselines import DenoiseHead, ElementMaskHead, SchNetPeer
from .config import Config, validate
from .empp import Conditioning, PositionHead, empp_loss, mask_position, reconstruct
from .model import Batch, EquivariantNet, collate
from .results import atomic_write_json, load_safetensors, read_json
from .runtime import RunConfig, resolve_device

EMPP_ARMS = ("empp", "empp_nolabel")
HEAD_ARMS = (*EMPP_ARMS, "empp_pretrain")  # arms that own a position head


@functools.lru_cache(maxsize=4)
def _qm9(n: int, max_heavy: int, hydrogens: bool) -> tuple[data.Molecule, ...]:
    return tuple(data.qm9_like(n, max_heavy, hydrogens))


@functools.lru_cache(maxsize=2)
def _real_qm9(folder: str) -> tuple[data.Molecule, ...]:
    return tuple(data.read_qm9_folder(folder))


@functools.lru_cache(maxsize=2)
def _csv_qm9(path: str, n: int) -> tuple[data.Molecule, ...]:
    return tuple(data.read_qm9_csv(path, n))


@functools.lru_cache(maxsize=4)
def _md(name: str, n: int, temperature: float, stride: int) -> tuple[data.Molecule, ...]:
    return tuple(data.md_like(name, n, temperature, stride, seed=0))


def load_split(cfg: Config) -> tuple[list, list, list, str, str, list]:
    """(train, val, test, label key, readout, unlabelled pool). The rdkit and MD data are fixed
    and split by cfg.seed; the qm9pack CSV data come in a fixed hashed order, so their split is
    fixed. The pool (QM9 only) holds further molecules whose labels are never read."""
    pool: list = []
    if cfg.task == "qm9":
        n_train, n = cfg.n_train, cfg.n_train + cfg.n_val + cfg.n_test
        key = cfg.target
        if cfg.qm9_csv:
            every = _csv_qm9(cfg.qm9_csv, n + cfg.n_pretrain)
            train, rest = list(every[:n_train]), list(every[n_train:n])
            val, test = rest[: cfg.n_val], rest[cfg.n_val :]
            readout = "sum" if cfg.target == "u0" else "mean"
            return train, val, test, key, readout, list(every[n:])
        if cfg.qm9_dir:
            every = _real_qm9(cfg.qm9_dir)
            key = {"u0": "U0", "gap": "gap", "mu": "mu"}[cfg.target]
        else:
            every = _qm9(n + cfg.n_pretrain, cfg.max_heavy, cfg.hydrogens)
        if len(every) < n:
            raise ValueError(
                f"need n_train + n_val + n_test = {n} molecules, the data hold {len(every)}"
            )
        mols, pool = every[:n], list(every[n : n + cfg.n_pretrain])
        readout = "sum" if cfg.target == "u0" else "mean"
        n_val = cfg.n_val
    else:
        n_train, n = cfg.md_n_train, cfg.md_n_train + cfg.md_n_test
        if cfg.md17_npz:
            path = data.md17_file(cfg.md17_npz, cfg.md_molecule)
            mols = tuple(data.read_md17_npz(path))
            if len(mols) < n:
                raise ValueError(f"{path}: {len(mols)} frames, need md_n_train + md_n_test = {n}")
            mols = mols[:: max(len(mols) // n, 1)][:n]
        else:
            mols = _md(cfg.md_molecule, n, cfg.md_temperature, cfg.md_stride)
        key, readout, n_val = "energy", "sum", 0
    perm = np.random.default_rng(cfg.seed).permutation(n)
    train = [mols[i] for i in perm[:n_train]]
    val = [mols[i] for i in perm[n_train : n_train + n_val]]
    test = [mols[i] for i in perm[n_train + n_val :]]
    return train, val, test, key, readout, pool


def normaliser(train: list, key: str) -> tuple[str, float, float]:
    """(label key, mean, std) of the training labels: the label standardisation."""
    labels = np.array([m.y[key] for m in train])
    return key, float(labels.mean()), float(labels.std() + 1e-8)


def build(cfg: Config, readout: str) -> tuple[torch.nn.Module, torch.nn.ModuleDict]:
    """The backbone for cfg.method and the auxiliary modules it trains alongside."""
    if cfg.method == "schnet":
        return SchNetPeer(cfg.cutoff, readout, cfg.schnet_hidden), torch.nn.ModuleDict()
    extra = 1 if cfg.method == "element_mask" else 0
    net = EquivariantNet(
        cfg.irreps_hidden, cfg.num_layers, cfg.cutoff, cfg.num_basis, readout, extra
    )
    aux = torch.nn.ModuleDict()
    if cfg.method in HEAD_ARMS:
        aux["cond"] = Conditioning(net.n_scalars, cfg.method == "empp", cfg.num_layers)
        res = (cfg.grid_beta, cfg.grid_alpha)
        aux["head"] = PositionHead(
            net.irreps, cfg.head_channels, res, cfg.num_radius_bins, cfg.head_mlp
        )
    elif cfg.method == "denoise":
        aux["head"] = DenoiseHead(net.irreps)
    elif cfg.method == "element_mask":
        aux["head"] = ElementMaskHead(net.n_scalars)
    return net, aux


def masked_forward(net, aux, cfg, mols, y_std, rng, num_mask, norm):
    """EMPP on masked copies of `mols`: (loss, head outputs, masked copies, their batch)."""
    m = mask_position(mols, rng, num_mask)
    mb = collate(m.mols, norm[0], norm[1], norm[2], cfg.device)
    cond = aux["cond"](m.element, y_std[torch.as_tensor(m.source, device=y_std.device)])
    _, h = net(mb, cond)
    target = torch.as_tensor(m.pos, dtype=torch.float32, device=mb.pos.device)
    loss, out = empp_loss(aux["head"], h, mb.pos, mb.batch, target, cfg)
    return loss, out, target, mb


def supervised_loss(net, b: Batch, std: float, cfg: Config, md: bool) -> torch.Tensor:
    """L1 on the standardised label, plus force L1 (in label-std units) on MD-like data."""
    if md:
        b.pos.requires_grad_(True)
    pred, _ = net(b)
    loss = (pred - b.y).abs().mean()
    if md:
        forces = -torch.autograd.grad(pred.sum() * std, b.pos, create_graph=True)[0]
        loss = loss + cfg.force_weight * (forces - b.forces).abs().mean() / std
    return loss


def errors(net, cfg, mols, norm, md: bool) -> dict[str, float]:
    """MAE in label units over `mols` (+ force MAE on MD data)."""
    key, mean, std = norm[0], norm[1], norm[2]
    errs, ferrs = [], []
    for i in range(0, len(mols), cfg.batch_size):
        b = collate(mols[i : i + cfg.batch_size], key, mean, std, cfg.device)
        b.pos.requires_grad_(md)
        pred, _ = net(b)
        errs.append(((pred - b.y) * std).abs().detach())
        if md:
            forces = -torch.autograd.grad(pred.sum() * std, b.pos)[0]
            ferrs.append((forces - b.forces).abs().mean(-1))
    metrics = {"mae": float(torch.cat(errs).mean())}
    if md:
        metrics["force_mae"] = float(torch.cat(ferrs).mean())
    return metrics


def evaluate_model(net, aux, cfg, test, norm, md: bool) -> dict[str, float]:
    """Test MAE in label units (+ force MAE on MD), and the EMPP head's reconstruction error."""
    metrics = errors(net, cfg, test, norm, md)
    if cfg.method in EMPP_ARMS:
        metrics |= position_errors(net, aux, cfg, test, norm)
    return metrics


def position_errors(net, aux, cfg, test, norm) -> dict[str, float]:
    """Head reconstruction error (A) on one masked copy per test molecule, and the error of the
    centroid of the same neighbours (the guess that needs no head)."""
    key, mean, std = norm[0], norm[1], norm[2]
    rng = np.random.default_rng(12345)
    with torch.no_grad():
        ys = torch.tensor([(m.y[key] - mean) / std for m in test], dtype=torch.float32)
        _, out, target, mb = masked_forward(net, aux, cfg, test, ys.to(cfg.device), rng, 1, norm)
        guess = reconstruct(mb.pos, out, len(target))
        centroid = reconstruct(mb.pos, {**out, "centres": out["centres"] * 0}, len(target))
    return {
        "pos_error": float((guess - target).norm(dim=-1).mean()),
        "centroid_error": float((centroid - target).norm(dim=-1).mean()),
    }


def train_and_evaluate(
    cfg: Config, workdir: str | Path, which: str | None = None
) -> dict[str, float]:
    """Train cfg.method (or `which`) for cfg.seed and return test metrics; writes config.json first."""
    if which is not None:
        cfg = dataclasses.replace(cfg, method=which)
    validate(cfg)
    cfg = dataclasses.replace(cfg, device=resolve_device(cfg.device))
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    if (
        cfg.resume
        and (workdir / "metrics.json").exists()
        and (workdir / "model.safetensors").exists()
    ):
        return read_json(workdir / "metrics.json", "metrics file")
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    train, val, test, key, readout, pool = load_split(cfg)
    norm = normaliser(train, key)
    md = cfg.task == "md"
    net, aux = build(cfg, readout)
    if isinstance(net, EquivariantNet):
        net.set_avg_neighbors(train)
    net.to(cfg.device), aux.to(cfg.device)
    params = list(net.parameters()) + list(aux.parameters())
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(len(train) / cfg.batch_size)
    total = cfg.epochs * steps_per_epoch

    def schedule(step: int) -> float:  # one warm-up epoch, then cosine to lr / 100
        if step < steps_per_epoch:
            return (step + 1) / steps_per_epoch
        frac = (step - steps_per_epoch) / max(total - steps_per_epoch, 1)
        return 0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * frac))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    quiet = cfg.quiet or not sys.stderr.isatty()
    pretrain_metrics, seen = {}, len(train) * cfg.epochs
    start = time.perf_counter()
    if cfg.method == "empp_pretrain":
        pretrain(net, aux, cfg, pool + train, norm, rng, quiet)
        pretrain_metrics = position_errors(net, aux, cfg, test, norm)
        seen += len(pool + train) * cfg.pretrain_epochs
    bar = tqdm(range(cfg.epochs), desc=f"{cfg.method} seed {cfg.seed}", disable=quiet)
    for _ in bar:
        for i in rng.permutation(steps_per_epoch):
            mols = [
                train[j]
                for j in range(i * cfg.batch_size, min((i + 1) * cfg.batch_size, len(train)))
            ]
            b = collate(mols, *norm, device=cfg.device)
            loss = supervised_loss(net, b, norm[2], cfg, md)
            if cfg.method in EMPP_ARMS:
                loss = (
                    loss
                    + cfg.aux_weight
                    * masked_forward(net, aux, cfg, mols, b.y, rng, cfg.num_mask, norm)[0]
                )
            elif cfg.method == "denoise":
                plain = Batch(b.species, b.pos.detach(), b.batch, b.num_graphs, b.y)
                loss = loss + cfg.aux_weight * aux["head"].loss(net, plain, cfg.noise_std, gen)
            elif cfg.method == "element_mask":
                plain = Batch(b.species, b.pos.detach(), b.batch, b.num_graphs, b.y)
                loss = loss + cfg.aux_weight * aux["head"].loss(net, plain, rng)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            bar.set_postfix(loss=f"{loss.item():.4f}")
    seconds = time.perf_counter() - start
    metrics = evaluate_model(net, aux, cfg, test, norm, md) | pretrain_metrics
    if val:
        metrics["val_mae"] = errors(net, cfg, val, norm, md)["mae"]
    metrics["train_mol_per_s"] = seen / seconds  # pre-training passes included
    metrics["params"] = float(sum(p.numel() for p in net.parameters()))  # backbone only
    save_checkpoint(workdir / "model.safetensors", net, aux)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def pretrain(net, aux, cfg: Config, mols: list, norm, rng, quiet: bool) -> None:
    """Self-supervised pre-training (the paper's pre-training mode): EMPP without label conditioning on
    unlabelled geometries for cfg.pretrain_epochs, constant lr; fine-tuning follows."""
    params = list(net.parameters()) + list(aux.parameters())
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    no_label = torch.zeros(cfg.batch_size, device=cfg.device)
    steps = math.ceil(len(mols) / cfg.batch_size)
    for _ in tqdm(range(cfg.pretrain_epochs), desc=f"pre-train seed {cfg.seed}", disable=quiet):
        order = rng.permutation(len(mols))
        for i in range(steps):
            batch = [mols[j] for j in order[i * cfg.batch_size : (i + 1) * cfg.batch_size]]
            y = no_label[: len(batch)]
            loss = masked_forward(net, aux, cfg, batch, y, rng, cfg.num_mask, norm)[0]
            opt.zero_grad()
            loss.backward()
            opt.step()


def save_checkpoint(path: Path, net: torch.nn.Module, aux: torch.nn.Module) -> None:
    """safetensors checkpoint of backbone and heads, written to a temporary file then renamed."""
    from safetensors.torch import save_model

    tmp = path.with_name(f".{path.name}.tmp")
    save_model(torch.nn.ModuleDict({"net": net, "aux": aux}), str(tmp))
    os.replace(tmp, path)


def run_config(cfg: Config, workdir: Path) -> Config:
    """The Config a run in workdir was trained with (its config.json); the device, threads,
    quiet flag and paths come from `cfg` (where this evaluation runs)."""
    path = workdir / "config.json"
    saved = read_json(path, "run config")
    if not isinstance(saved, dict):
        raise ValueError(f"{path}: expected a JSON object")  # noqa: TRY004
    plumbing = {f.name for f in dataclasses.fields(RunConfig)} - {"name", "seed"}
    fields = {f.name for f in dataclasses.fields(Config)} - plumbing - {"threads", "resume"}
    try:
        return validate(
            dataclasses.replace(
                cfg,
                **{
                    k: tuple(v) if isinstance(v, list) else v
                    for k, v in saved.items()
                    if k in fields
                },
            )
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a config of this version ({exc})") from None


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Reload the backbone and heads a previous `train` saved in workdir (model.safetensors) and
    evaluate them again on the run's own test split: the same metrics as train's, except the
    training speed (and, for empp_pretrain, the head errors measured before fine-tuning)."""
    workdir = Path(workdir)
    run_cfg = run_config(cfg, workdir)
    run_cfg = dataclasses.replace(run_cfg, device=resolve_device(run_cfg.device))
    torch.set_num_threads(cfg.threads)
    train, val, test, key, readout, _ = load_split(run_cfg)
    norm = normaliser(train, key)
    net, aux = build(run_cfg, readout)
    path = workdir / "model.safetensors"
    tensors = load_safetensors(path)
    try:
        torch.nn.ModuleDict({"net": net, "aux": aux}).load_state_dict(tensors)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0][:120]
        raise ValueError(f"{path}: not a model of this run's config ({first})") from None
    net.to(run_cfg.device), aux.to(run_cfg.device)  # as train evaluates them (no train/eval modes)
    md = run_cfg.task == "md"
    metrics = evaluate_model(net, aux, run_cfg, test, norm, md)
    if val:
        metrics["val_mae"] = errors(net, run_cfg, val, norm, md)["mae"]
    metrics["params"] = float(sum(p.numel() for p in net.parameters()))
    user = user_file(cfg, run_cfg)
    if user:
        mols = user_molecules(run_cfg, user)
        metrics |= {f"file_{k}": v for k, v in errors(net, run_cfg, mols, norm, md).items()}
        metrics["file_molecules"] = float(len(mols))
    return metrics


def user_file(cfg: Config, run_cfg: Config) -> str:
    """The data file given to `eval` that the run was not trained on (empty: none), in the
    format the run was trained on (same label units): an MD17 / rMD17 file or folder for an MD
    run, a qm9pack-layout CSV for a qm9-csv run, a folder of .xyz files for a qm9-dir run."""
    fields = ("md17_npz",) if run_cfg.task == "md" else ("qm9_csv", "qm9_dir")
    for field in fields:
        given = getattr(cfg, field)
        if not given or given == getattr(run_cfg, field):
            continue
        trained = "qm9_csv" if run_cfg.qm9_csv else "qm9_dir" if run_cfg.qm9_dir else ""
        if run_cfg.task == "qm9" and field != trained:
            where = trained.replace("_", "-") or "the rdkit QM9-like set"
            raise ValueError(
                f"--{field.replace('_', '-')} {given}: this run was trained on {where}; eval "
                "reads a user's file only in the format (and label units) it was trained on"
            )
        return f"{field}={given}"
    return ""


def user_molecules(run_cfg: Config, user: str) -> list:
    """Every molecule of the user's file (eval on a user's file); labels as in training."""
    field, path = user.split("=", 1)
    if field == "md17_npz":
        return data.read_md17_npz(data.md17_file(path, run_cfg.md_molecule))
    if field == "qm9_dir":
        return data.read_qm9_folder(path)
    return data.read_qm9_csv(path, None)
