"""Diagnostics of DeGEM's energy head over training (reported only; nothing is selected on them).

energy_trace trains DeGEM exactly as a benchmark run does (same seed, same random stream, so its
last epoch is the run's DeGEM model) and records after every update, with the model in eval mode:
the mean energy of the training nodes, the validation nodes, the replay-buffer SGLD samples and a
fixed draw of U[0, 1)^d (where fresh chains start), the mean norms of data and buffer samples,
the AUROC of -E for the structure and feature shifts, and the classifier's validation accuracy
(an ID-only model selection criterion one could use instead of the last epoch). The per-epoch
AUROC uses test OOD nodes and is *only* reported: its maximum over epochs is what the official
main.py's model selection (best test AUROC + test accuracy) would report, shown to measure how
much that selection alone can add.

head_only_trace asks whether the energy head *can* learn the data density when the encoder stops
moving: after the same training it freezes the encoder (eval mode) and the readout c and keeps
training the head alone, with the same loss, sampler, replay buffer and optimiser settings. This is
not the paper's schedule (one joint step per epoch); it is reported only.
"""

from __future__ import annotations

import numpy as np
import torch

from . import data
from .config import Config
from .degem import contrastive_divergence, hop_features, normalized_adjacency
from .train import fit_degem, make_graphs, ood_metrics

WARMUP = 10  # epochs left out of the over-training mean / std (the head starts at random init)


def energy_trace(cfg: Config) -> dict[str, list[float]]:
    """Per-epoch energies, norms and structure / feature AUROC of -E on cfg's ID graph."""
    g, shifted = make_graphs(cfg)
    train, val, test, _ = data.split(g.y, (), cfg.train_frac, cfg.seed)
    ood_hops = {
        k: hop_features(v.x, normalized_adjacency(v.edge_index, v.n), cfg.hops, cfg.beta)
        for k, v in shifted.items()
    }
    noise = torch.rand(
        500, cfg.hidden, generator=torch.Generator().manual_seed(cfg.seed + 1), device="cpu"
    ).to(g.x.device)
    trace: dict[str, list[float]] = {
        k: []
        for k in (
            "e_train", "e_val", "e_buffer", "e_noise", "norm_data", "norm_buffer",
            "auroc_structure", "auroc_feature", "val_acc",
        )
    }  # fmt: skip

    def record(model, hops_x) -> None:
        energy = lambda z: model.head(z, model.c)
        was = model.training
        model.eval()
        with torch.no_grad():
            z = model.encoder(hops_x)
            e_id = energy(z[test])
            trace["e_train"].append(float(energy(z[train]).mean()))
            trace["e_val"].append(float(energy(z[val]).mean()))
            trace["e_buffer"].append(float(energy(model.buffer).mean()))
            trace["e_noise"].append(float(energy(noise).mean()))
            trace["norm_data"].append(float(z.norm(dim=1).mean()))
            trace["norm_buffer"].append(float(model.buffer.norm(dim=1).mean()))
            pred = model.classifier(z[val]).argmax(dim=1)
            trace["val_acc"].append(100 * float((pred == g.y[val]).float().mean()))
            for shift, h in ood_hops.items():
                e_ood = energy(model.encoder(h)[test])
                trace[f"auroc_{shift}"].append(ood_metrics(-e_id, -e_ood)["auroc"])
        model.train(was)

    fit_degem(cfg, g, train, cfg.n_classes, on_epoch=record)
    return trace


def head_only_trace(cfg: Config, steps: int, every: int) -> dict[str, list[float]]:
    """Train DeGEM as usual, then the energy head alone on the frozen encoder for `steps` steps.

    Records, every `every` steps (step 0 = the trained model), the eval-mode mean energy of the
    training nodes and the replay buffer and the AUROC of -E for the structure and feature shifts.
    """
    g, shifted = make_graphs(cfg)
    train, _, test, _ = data.split(g.y, (), cfg.train_frac, cfg.seed)
    model = fit_degem(cfg, g, train, cfg.n_classes)
    model.eval()
    with torch.no_grad():
        z = model.encoder(
            hop_features(g.x, normalized_adjacency(g.edge_index, g.n), cfg.hops, cfg.beta)
        )
        z_ood = {
            k: model.encoder(
                hop_features(v.x, normalized_adjacency(v.edge_index, v.n), cfg.hops, cfg.beta)
            )
            for k, v in shifted.items()
        }
    opt = torch.optim.Adam(model.head.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    keys = ("step", "e_train", "e_buffer", "auroc_structure", "auroc_feature")
    trace: dict[str, list[float]] = {k: [] for k in keys}
    for step in range(steps + 1):
        if step % every == 0:
            model.head.eval()
            with torch.no_grad():
                energy = lambda q: model.head(q, model.c)
                trace["step"].append(step)
                trace["e_train"].append(float(energy(z[train]).mean()))
                trace["e_buffer"].append(float(energy(model.buffer).mean()))
                for shift, zo in z_ood.items():
                    auroc = ood_metrics(-energy(z[test]), -energy(zo[test]))["auroc"]
                    trace[f"auroc_{shift}"].append(auroc)
        if step == steps:
            break
        model.head.train()
        opt.zero_grad()
        e_data, e_sample = model.energies(z, train.numel())
        contrastive_divergence(e_data[train], e_sample, cfg.reg).backward()
        opt.step()
    return trace


def summarize_trace(trace: dict[str, list[float]]) -> dict[str, float]:
    """Last-epoch values, over-training mean / std of the AUROC, and energy-ordering fractions."""
    a = {k: np.asarray(v) for k, v in trace.items()}
    avg = (a["auroc_structure"] + a["auroc_feature"]) / 2
    late = avg[WARMUP:] if len(avg) > WARMUP else avg
    return {
        "last_auroc_structure": float(a["auroc_structure"][-1]),
        "last_auroc_feature": float(a["auroc_feature"][-1]),
        "mean_over_epochs_auroc": float(late.mean()),
        "std_over_epochs_auroc": float(late.std()),
        "max_over_epochs_auroc_test_selected": float(avg.max()),
        "epoch_of_max": int(avg.argmax()) + 1,
        "val_acc_selected_auroc": float(avg[int(a["val_acc"].argmax())]),
        "val_acc_selected_epoch": int(a["val_acc"].argmax()) + 1,
        "frac_epochs_buffer_below_train": float((a["e_buffer"] < a["e_train"]).mean()),
        "frac_epochs_noise_above_train": float((a["e_noise"] > a["e_train"]).mean()),
        "last_e_train": float(a["e_train"][-1]),
        "last_e_val": float(a["e_val"][-1]),
        "last_e_buffer": float(a["e_buffer"][-1]),
        "last_e_noise": float(a["e_noise"][-1]),
        "last_norm_data": float(a["norm_data"][-1]),
        "last_norm_buffer": float(a["norm_buffer"][-1]),
    }
