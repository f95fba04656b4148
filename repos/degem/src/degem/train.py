"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

One run = one generated graph (cfg.homophily, cfg.pattern, cfg.seed), the paper's three OOD
shifts, DeGEM and the GCN baselines (MSP, Energy, GNNSafe) trained on in-distribution data only,
plus the LatentGauss reference (a Gaussian on DeGEM's embeddings of the training nodes).
Model selection never sees OOD data: the GCN keeps its best validation-accuracy epoch, DeGEM its
last epoch.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve
from tqdm import tqdm

from . import baselines, data
from .config import Config, validate
from .degem import DeGEM, hop_features, normalized_adjacency
from .results import atomic_write_json

METHODS = ("DeGEM", "DeGEM+prop", "LatentGauss", "GNNSafe", "Energy", "MSP")
DEGEM_BASED = ("DeGEM", "DeGEM+prop", "LatentGauss")  # scored from DeGEM's trained encoder
SHIFTS = ("structure", "feature", "label")


def ood_metrics(score_id: torch.Tensor, score_ood: torch.Tensor) -> dict[str, float]:
    """AUROC, AUPR (ID as positive) and FPR at 95% ID recall, in percent."""
    s = np.concatenate([score_id.cpu().numpy(), score_ood.cpu().numpy()])
    lab = np.concatenate([np.ones(len(score_id)), np.zeros(len(score_ood))])
    fpr, tpr, _ = roc_curve(lab, s)
    return {
        "auroc": 100 * float(roc_auc_score(lab, s)),
        "aupr": 100 * float(average_precision_score(lab, s)),
        "fpr95": 100 * float(fpr[np.searchsorted(tpr, 0.95, side="left")]),
    }


def _bar(cfg: Config, desc: str):
    return tqdm(range(cfg.epochs), desc=desc, disable=cfg.quiet or not sys.stderr.isatty())


def fit_degem(
    cfg: Config, g: data.Graph, train: torch.Tensor, n_classes: int, on_epoch=None
) -> DeGEM:
    """Algorithm 1: cache hop features once, then one joint (recurrent) update per epoch.

    on_epoch(model, hops_x), if given, is called after every update (diagnostics only); it must
    not draw from torch's global random stream, so that training is unchanged by it.
    """
    adj = normalized_adjacency(g.edge_index, g.n)
    hops_x = hop_features(g.x, adj, cfg.hops, cfg.beta)
    model = DeGEM(g.x.shape[1], n_classes, cfg).to(g.x.device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    for _ in (bar := _bar(cfg, "DeGEM")):
        opt.zero_grad()
        parts = model.loss(hops_x, g.x, adj, train, g.y)
        parts["loss"].backward()
        opt.step()
        bar.set_postfix({k: f"{v.item():.3f}" for k, v in parts.items()})
        if on_epoch is not None:
            on_epoch(model, hops_x)
    return model


def degem_outputs(model: DeGEM, g: data.Graph):
    """-E score, logits and embeddings z of every node of g, with the readout c learnt in training."""
    cfg = model.cfg
    hops_x = hop_features(g.x, normalized_adjacency(g.edge_index, g.n), cfg.hops, cfg.beta)
    return (*model.score_and_logits(hops_x), model.embed(hops_x))


def fit_gcn(cfg: Config, g: data.Graph, train, val, n_classes: int) -> baselines.GCN:
    """GCN by cross-entropy on the training labels; keeps the best validation-accuracy epoch."""
    model = baselines.GCN(g.x.shape[1], cfg.gcn_hidden, n_classes, cfg.dropout).to(g.x.device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.gcn_lr, weight_decay=cfg.gcn_weight_decay)
    best, best_state = -1.0, None
    for _ in (bar := _bar(cfg, "GCN")):
        model.train()
        opt.zero_grad()
        loss = F.cross_entropy(model(g.x, g.edge_index)[train], g.y[train])
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            acc = float((model(g.x, g.edge_index)[val].argmax(1) == g.y[val]).float().mean())
        if acc > best:
            best, best_state = acc, copy.deepcopy(model.state_dict())
        bar.set_postfix(loss=f"{loss.item():.3f}", val_acc=f"{acc:.3f}")
    model.load_state_dict(best_state)
    return model.eval()


def all_scores(cfg: Config, degem: DeGEM, gauss, gcn: baselines.GCN, g: data.Graph):
    """Every method's per-node score on graph g, and the two models' logits.

    gauss: (mean, precision) of DeGEM's embeddings of the training nodes (LatentGauss reference).
    """
    e_score, d_logits, z = degem_outputs(degem, g)
    with torch.no_grad():
        logits = gcn(g.x, g.edge_index)
    energy = baselines.energy_score(logits, cfg.temperature)
    prop = (cfg.prop_layers, cfg.prop_alpha)
    scores = {
        "DeGEM": e_score,
        "DeGEM+prop": baselines.propagate_energy(e_score, g.edge_index, *prop),
        "LatentGauss": baselines.gaussian_score(z, *gauss),
        "GNNSafe": baselines.propagate_energy(energy, g.edge_index, *prop),
        "Energy": energy,
        "MSP": baselines.msp_score(logits),
    }
    return scores, {"DeGEM": d_logits, "GCN": logits}


def _accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    return 100 * float((logits.argmax(1) == y).float().mean())


def run_setting(cfg: Config, g: data.Graph, ood_classes: tuple[int, ...]):
    """Train both models on the ID part of g; returns a scorer for any graph and ID accuracies."""
    train, val, test_id, test_ood = data.split(g.y, ood_classes, cfg.train_frac, cfg.seed)
    id_classes = [c for c in range(cfg.n_classes) if c not in ood_classes]
    remap = torch.full((cfg.n_classes,), -1, dtype=torch.long, device=g.y.device)
    remap[id_classes] = torch.arange(len(id_classes), device=g.y.device)
    g_id = dataclasses.replace(g, y=remap[g.y])
    degem = fit_degem(cfg, g_id, train, len(id_classes))
    gauss = baselines.gaussian_fit(degem_outputs(degem, g_id)[2][train])
    gcn = fit_gcn(cfg, g_id, train, val, len(id_classes))
    scores, logits = all_scores(cfg, degem, gauss, gcn, g_id)
    acc = {k: _accuracy(v[test_id], g_id.y[test_id]) for k, v in logits.items()}
    scorer = lambda other: all_scores(cfg, degem, gauss, gcn, other)[0]
    return scorer, scores, test_id, test_ood, acc


def make_graphs(cfg: Config) -> tuple[data.Graph, dict[str, data.Graph]]:
    """Seed torch, then build the ID graph and its structure / feature shifts on cfg.device."""
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    dev = torch.device(cfg.device)
    g = data.csbm(
        cfg.n_nodes, cfg.n_classes, cfg.feat_dim, cfg.class_sep, cfg.mean_degree,
        cfg.homophily, cfg.pattern, cfg.seed,
    )  # fmt: skip
    g = data.check_graph(g, cfg.n_classes)
    shifted = {
        "structure": data.structure_shift(g, cfg.n_classes, cfg.seed),
        "feature": data.feature_shift(g, cfg.seed),
    }

    def to_dev(gr: data.Graph) -> data.Graph:
        return data.Graph(gr.x.to(dev), gr.edge_index.to(dev), gr.y.to(dev))

    return to_dev(g), {k: to_dev(v) for k, v in shifted.items()}


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """All methods on one generated graph and seed; returns flat '<method>/<metric>' numbers."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    g, shifted = make_graphs(cfg)
    per_shift: dict[str, dict[str, torch.Tensor | tuple]] = {}
    scorer, id_scores, test_id, _, acc = run_setting(cfg, g, ())
    for shift, g_ood in shifted.items():
        ood_scores = scorer(g_ood)
        per_shift[shift] = {m: (id_scores[m][test_id], ood_scores[m][test_id]) for m in METHODS}
    _, lbl_scores, lbl_id, lbl_ood, _ = run_setting(cfg, g, tuple(cfg.ood_classes))
    per_shift["label"] = {m: (lbl_scores[m][lbl_id], lbl_scores[m][lbl_ood]) for m in METHODS}
    metrics: dict[str, float] = {"graph/edge_homophily": data.edge_homophily(g.edge_index, g.y)}
    for m in METHODS:
        for shift in SHIFTS:
            for key, val in ood_metrics(*per_shift[shift][m]).items():
                metrics[f"{m}/{shift}_{key}"] = val
        metrics[f"{m}/avg_auroc"] = float(np.mean([metrics[f"{m}/{s}_auroc"] for s in SHIFTS]))
        metrics[f"{m}/id_acc"] = acc["DeGEM" if m in DEGEM_BASED else "GCN"]
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
