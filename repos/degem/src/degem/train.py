"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

One run = one graph (generated from cfg.homophily, cfg.pattern, cfg.seed, or read from
cfg.graph_file), the paper's three OOD shifts, DeGEM and the GCN baselines (MSP, Energy, GNNSafe)
trained on in-distribution data only, the LatentGauss reference (a Gaussian on DeGEM's embeddings
of the training nodes), an untrained DeGEM (negative control) and, on generated graphs, the
generative oracle (the true ID likelihood), and DistToReadout (minus the distance of DeGEM's z to
its readout c: the radial score an energy learnt from far-away SGLD samples reduces to). Headline numbers never see OOD data: the GCN keeps its
best validation-accuracy epoch and DeGEM its last epoch; DeGEM@val and DeGEM@test are the same
training run with the epoch picked on ID validation data or, as the official main.py does, on test
OOD AUROC (tracking.select_epochs). The trained models go to workdir/model.safetensors; `evaluate`
rebuilds the graphs from the saved config, loads them and scores every method again.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve
from tqdm import tqdm

from . import baselines, checkpoint, data
from .config import Config, validate
from .degem import DeGEM, hop_features, normalized_adjacency
from .results import atomic_write_json, load_safetensors, read_config, save_safetensors
from .runtime import resolve_device
from .tracking import EpochTracker, select_epochs

METHODS = ("DeGEM", "DeGEM+prop", "LatentGauss", "GNNSafe", "Energy", "MSP")
SELECTED = ("DeGEM@val", "DeGEM@test")  # DeGEM's -E at the epoch another rule picks
CONTROLS = ("DeGEM[untrained]", "Oracle", "DistToReadout")  # control, oracle, diagnostic
DEGEM_BASED = ("DeGEM", "DeGEM+prop", "LatentGauss", "DeGEM[untrained]", "DistToReadout")
SHIFTS = ("structure", "feature", "label")
MODEL_FILE = "model.safetensors"
# Fields eval takes from its own command line; the run's config.json decides every other one.
CALLER_FIELDS = ("device", "out", "results_dir", "quiet", "name", "partial_out", "merge")


def _np(a) -> np.ndarray:
    return a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)


def ood_metrics(score_id, score_ood) -> dict[str, float]:
    """AUROC, AUPR (ID as positive) and FPR at 95% ID recall, in percent (tensors or arrays)."""
    s = np.concatenate([_np(score_id), _np(score_ood)])
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
        for _ in range(cfg.head_steps - 1):  # parameters without a gradient are left alone
            opt.zero_grad()
            model.head_loss(model.z, train).backward()
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


def all_scores(cfg: Config, models: dict, g: data.Graph) -> tuple[dict, dict]:
    """Every method's per-node score on graph g, and the DeGEM / GCN / MLP logits.

    models: degem, untrained (a DeGEM at initialisation), gauss ((mean, precision) of DeGEM's
    embeddings of the training nodes), gcn, mlp, and oracle (graph -> score) or None.
    """
    e_score, d_logits, z = degem_outputs(models["degem"], g)
    prop = (cfg.prop_layers, cfg.prop_alpha)
    scores = {
        "DeGEM": e_score,
        "DeGEM+prop": baselines.propagate_energy(e_score, g.edge_index, *prop),
        "LatentGauss": baselines.gaussian_score(z, *models["gauss"]),
        "DistToReadout": -(z - models["degem"].c).norm(dim=1),  # diagnostic, see README
    }
    logits = {"DeGEM": d_logits}
    if models["gcn"] is None:  # degem_only
        return scores, logits
    with torch.no_grad():
        logits["GCN"] = models["gcn"](g.x, g.edge_index)
        logits["MLP"] = models["mlp"](g.x, g.edge_index[:, :0])
    energy = baselines.energy_score(logits["GCN"], cfg.temperature)
    scores |= {
        "GNNSafe": baselines.propagate_energy(energy, g.edge_index, *prop),
        "Energy": energy,
        "MSP": baselines.msp_score(logits["GCN"]),
        "DeGEM[untrained]": degem_outputs(models["untrained"], g)[0],
    }
    if models["oracle"] is not None:
        scores["Oracle"] = models["oracle"](g)
    return scores, logits


def _accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    return 100 * float((logits.argmax(1) == y).float().mean())


def untrained_degem(cfg: Config, in_dim: int, n_classes: int, device) -> DeGEM:
    """Negative control: DeGEM at initialisation (readout c = 0), drawn off the global stream."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed + 1)
        return DeGEM(in_dim, n_classes, cfg).to(device).eval()


@dataclasses.dataclass
class Setting:
    """One training run and its scores: graph name ('id' or a shift) -> method -> node scores."""

    scores: dict[str, dict[str, torch.Tensor]]
    test_id: torch.Tensor
    test_ood: torch.Tensor
    acc: dict[str, float]
    tracker: EpochTracker | None
    trained: dict  # degem, gauss, gcn, mlp: what train saves and eval loads


def setting_graphs(cfg: Config, g: data.Graph, ood_classes, shifted: dict):
    """The split of g's nodes, its ID classes, and g and its shifted copies relabelled to them."""
    ignore = tuple(cfg.ignore_classes) if ood_classes else ()
    nodes = data.split(g.y, ood_classes, cfg.train_frac, cfg.seed, ignore)
    id_classes = [c for c in range(cfg.n_classes) if c not in ood_classes and c not in ignore]
    remap = torch.full((cfg.n_classes,), -1, dtype=torch.long, device=g.y.device)
    remap[id_classes] = torch.arange(len(id_classes), device=g.y.device)
    graphs = {k: dataclasses.replace(v, y=remap[g.y]) for k, v in {"id": g, **shifted}.items()}
    return nodes, id_classes, graphs


def score_setting(
    cfg: Config, g: data.Graph, ood_classes, shifted: dict, oracle_params, trained: dict,
    tracker: EpochTracker | None = None,
) -> Setting:  # fmt: skip
    """Every method's scores on g and its shifted copies from trained models (degem, gauss, gcn,
    mlp; gcn and mlp None for a DeGEM-only run), with the untrained control and the oracle."""
    (_, _, test_id, test_ood), id_classes, graphs = setting_graphs(cfg, g, ood_classes, shifted)
    models = {
        **trained,
        "untrained": untrained_degem(cfg, g.x.shape[1], len(id_classes), g.x.device),
        "oracle": None
        if oracle_params is None
        else lambda gr: data.generative_score(gr, g.y, *oracle_params, id_classes),
    }
    out = {k: all_scores(cfg, models, v) for k, v in graphs.items()}
    g_id = graphs["id"]
    acc = {k: _accuracy(v[test_id], g_id.y[test_id]) for k, v in out["id"][1].items()}
    return Setting({k: v[0] for k, v in out.items()}, test_id, test_ood, acc, tracker, trained)


def run_setting(
    cfg, g: data.Graph, ood_classes, shifted: dict, oracle_params, degem_only: bool = False
) -> Setting:
    """Train every model (only DeGEM with degem_only) on the ID part of g, tracking DeGEM on g
    and its shifted copies."""
    (train, val, test_id, _), id_classes, graphs = setting_graphs(cfg, g, ood_classes, shifted)
    g_id = graphs["id"]
    hops = {
        k: hop_features(v.x, normalized_adjacency(v.edge_index, v.n), cfg.hops, cfg.beta)
        for k, v in graphs.items()
    }
    tracker = EpochTracker(hops, {"train": train, "val": val, "test": test_id}, g_id.y, cfg.seed)
    degem = fit_degem(cfg, g_id, train, len(id_classes), on_epoch=tracker)
    no_edges = dataclasses.replace(g_id, edge_index=g_id.edge_index[:, :0])
    trained = {
        "degem": degem,
        "gauss": baselines.gaussian_fit(degem_outputs(degem, g_id)[2][train]),
        "gcn": None if degem_only else fit_gcn(cfg, g_id, train, val, len(id_classes)),
        # the same GCN without edges: a feature-only MLP, for the ID accuracy it reaches
        "mlp": None if degem_only else fit_gcn(cfg, no_edges, train, val, len(id_classes)),
    }
    return score_setting(cfg, g, ood_classes, shifted, oracle_params, trained, tracker)


def make_graphs(cfg: Config):
    """Seed torch, then build the ID graph, its structure / feature shifts and the oracle's
    generator parameters (None for a graph file) on cfg.device."""
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    dev = torch.device(cfg.device)
    if cfg.graph_file:
        g, oracle = data.load_graph(cfg.graph_file, cfg.normalize_features), None
    else:
        g = data.csbm(
            cfg.n_nodes, cfg.n_classes, cfg.feat_dim, cfg.class_sep, cfg.mean_degree,
            cfg.homophily, cfg.pattern, cfg.seed,
        )  # fmt: skip
        oracle = (
            data.class_means(cfg.n_classes, cfg.feat_dim, cfg.class_sep, cfg.seed).to(dev),
            data.block_probs(
                cfg.n_classes, cfg.n_nodes / cfg.n_classes, cfg.mean_degree, cfg.homophily,
                cfg.pattern,
            ),
        )  # fmt: skip
    g = data.check_graph(g, cfg.n_classes)
    shifted = {
        "structure": data.structure_shift(g, cfg.n_classes, cfg.seed),
        "feature": data.feature_shift(g, cfg.seed),
    }

    def to_dev(gr: data.Graph) -> data.Graph:
        return data.Graph(gr.x.to(dev), gr.edge_index.to(dev), gr.y.to(dev))

    return to_dev(g), {k: to_dev(v) for k, v in shifted.items()}, oracle


def resolve(cfg: Config) -> Config:
    """Validate cfg; with a graph file, take n_classes from its labels first; 'auto' device."""
    if cfg.graph_file:
        n_classes = int(data.load_graph(cfg.graph_file, False).y.max()) + 1
        cfg = dataclasses.replace(cfg, n_classes=n_classes)
    return dataclasses.replace(validate(cfg), device=resolve_device(cfg.device))


def ood_table(g: data.Graph, shifts, first: Setting, label: Setting) -> dict[str, float]:
    """'<method>/<shift>_<metric>', id_acc and avg_auroc of every scored method, and the graph's
    homophily and GCN / MLP accuracies; `shifts` are the graphs of `first` besides 'id'."""
    where = _where(shifts, first, label)
    metrics: dict[str, float] = {
        "graph/edge_homophily": data.edge_homophily(g.edge_index, g.y),
    }
    if "GCN" in first.acc:
        metrics["graph/gcn_acc"], metrics["graph/mlp_acc"] = first.acc["GCN"], first.acc["MLP"]
    methods = list(first.scores["id"])
    for m in methods:
        for shift, (st, gi, ni, go, no) in where.items():
            pair = (st.scores[gi][m][ni], st.scores[go][m][no])
            for key, val in ood_metrics(*pair).items():
                metrics[f"{m}/{shift}_{key}"] = val
        metrics[f"{m}/id_acc"] = first.acc["DeGEM" if m in DEGEM_BASED else "GCN"]
    for m in methods:
        metrics[f"{m}/avg_auroc"] = float(np.mean([metrics[f"{m}/{s}_auroc"] for s in SHIFTS]))
    return metrics


def _where(shifts, first: Setting, label: Setting) -> dict:
    """shift -> (setting, ID graph, ID nodes, OOD graph, OOD nodes) of its AUROC."""
    where = {s: (first, "id", first.test_id, s, first.test_id) for s in shifts}
    where["label"] = (label, "id", label.test_id, "id", label.test_ood)
    return where


def train_and_evaluate(cfg: Config, workdir: str | Path, degem_only: bool = False) -> dict:
    """All methods on one graph and seed; returns flat '<method>/<metric>' numbers.

    degem_only skips the GCN baselines (the bench's DeGEM ablations). Writes workdir/config.json
    first, then model.safetensors (every trained model), trace.json (DeGEM's per-epoch log and
    AUROC curves, diagnostics) and metrics.json.
    """
    cfg = resolve(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    g, shifted, oracle = make_graphs(cfg)
    first = run_setting(cfg, g, (), shifted, oracle, degem_only)
    label = run_setting(cfg, g, tuple(cfg.ood_classes), {}, oracle, degem_only)
    save_safetensors(workdir / MODEL_FILE, checkpoint.tensors_of(first.trained, label.trained))
    metrics = ood_table(g, shifted, first, label)
    where = _where(shifted, first, label)
    sel = {
        "first": select_epochs(first.tracker, {s: w[1:] for s, w in where.items() if s != "label"}),
        "label": select_epochs(label.tracker, {"label": where["label"][1:]}),
    }
    for rule in ("val", "test"):
        m = f"DeGEM@{rule}"
        for shift, (st, gi, ni, go, no) in where.items():
            t = sel["label" if shift == "label" else "first"]["epochs"][shift][rule]
            pair = (st.tracker.scores[gi][t][ni], st.tracker.scores[go][t][no])
            for key, val in ood_metrics(*pair).items():
                metrics[f"{m}/{shift}_{key}"] = val
            metrics[f"{m}/{shift}_epoch"] = float(t + 1)
        metrics[f"{m}/id_acc"] = first.tracker.log["test_acc"][
            sel["first"]["epochs"]["structure"][rule]
        ]
        metrics[f"{m}/avg_auroc"] = float(np.mean([metrics[f"{m}/{s}_auroc"] for s in SHIFTS]))
    log = first.tracker.log
    metrics["DeGEM/diag_p_ess"] = log["p_ess"][-1]
    metrics["DeGEM/diag_corr_e_dist_c"] = log["corr_e_dist_c"][-1]
    metrics["DeGEM/diag_buffer_below_train"] = float(
        np.mean(np.asarray(log["e_buffer"]) < np.asarray(log["e_train"]))
    )
    metrics["DeGEM/diag_norm_ratio"] = log["norm_buffer"][-1] / log["norm_data"][-1]
    trace = {**log, **{f"auroc_{s}": c.tolist() for s, c in sel["first"]["curves"].items()}}
    trace["auroc_label"] = sel["label"]["curves"]["label"].tolist()
    atomic_write_json(workdir / "trace.json", trace)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Load the models a previous `train` saved in workdir, rebuild its graphs from its
    config.json (generated data is a function of the seed) and score every method again.

    Returns the same '<method>/<metric>' numbers as train for every method and control scored
    by the final models; DeGEM@val / DeGEM@test pick an epoch from training's per-epoch trace, so
    only train reports them (and the diagnostics). cfg gives the device; the rest is the run's.
    """
    workdir = Path(workdir)
    saved = read_config(workdir / "config.json", Config, validate)
    run_cfg = dataclasses.replace(saved, **{k: getattr(cfg, k) for k in CALLER_FIELDS})
    tensors = load_safetensors(workdir / MODEL_FILE)
    g, shifted, oracle = make_graphs(run_cfg)
    settings = {}
    for name, ood, shifts in (("first", (), shifted), ("label", tuple(run_cfg.ood_classes), {})):
        n_id = run_cfg.n_classes - len(set(ood) | (set(run_cfg.ignore_classes) if ood else set()))
        trained = checkpoint.load(tensors, name, run_cfg, g.x.shape[1], n_id, workdir / MODEL_FILE)
        settings[name] = score_setting(run_cfg, g, ood, shifts, oracle, trained)
    return ood_table(g, shifted, settings["first"], settings["label"])
