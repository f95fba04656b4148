"""What DeGEM looks like after every training epoch, and the three ways to pick an epoch.

EpochTracker is the `on_epoch` hook of `train.fit_degem`. After every update it puts the model in
eval mode and records, for the ID graph and every shifted graph it was given, the score -E of
every node; the classifier's validation and test accuracy; an ID-only density proxy (AUROC of -E
between the validation nodes and a fixed draw of U[0, 1)^d, where fresh SGLD chains start); and the
energy-head state that explains the training dynamics (energies of data, buffer and noise, norms,
the readout's effective sample size 1 / sum p_i^2 and the energy's correlation with the distance
to the readout c). It never draws from torch's global random stream, so training is unchanged.

Model selection (`select_epochs`): 'last' (our default: no held-out data needed), 'val' (the
official criterion "AUROC + accuracy" with both halves moved to ID-only validation data: the
density proxy + validation accuracy) and 'test' (the official main.py: per OOD type, the epoch
with the best *test* OOD AUROC + test accuracy, which leaks test OOD labels; reported only, so
that the paper's numbers can be placed).

`trace_summary` and `radial_analysis` condense the traces and the bench's metrics for its JSON.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import rankdata, spearmanr

NOISE_SEED_OFFSET = (
    1  # the fixed U[0, 1)^d draw uses torch.Generator(seed + 1), never the global one
)


def auroc(score_id: np.ndarray, score_ood: np.ndarray) -> float:
    """AUROC in percent with ID as the positive class (the official get_measures convention).

    The Mann-Whitney rank statistic with mid-ranks for ties: equal to scikit-learn's
    roc_auc_score (tested) at a fraction of its per-call cost, which matters once per epoch.
    """
    ranks = rankdata(np.concatenate([score_id, score_ood]))
    n_id, n_ood = len(score_id), len(score_ood)
    return 100 * float((ranks[:n_id].sum() - n_id * (n_id + 1) / 2) / (n_id * n_ood))


def _spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    ra, rb = a.argsort().argsort().double(), b.argsort().argsort().double()
    return float(torch.corrcoef(torch.stack([ra, rb]))[0, 1])


class EpochTracker:
    """on_epoch hook: per-epoch scores on several graphs, accuracies and energy-head state.

    graphs: name -> hop features (K+1, n, d) of a graph with the same nodes as the training graph
    ("id" must be one of them); nodes: name -> index tensor (train, val, test) on the ID graph.
    """

    def __init__(self, graphs: dict[str, torch.Tensor], nodes: dict[str, torch.Tensor], y, seed):
        self.graphs, self.nodes, self.y = graphs, nodes, y
        self.noise: torch.Tensor | None = None
        self.seed = seed
        self.scores: dict[str, list[np.ndarray]] = {k: [] for k in graphs}
        self.log: dict[str, list[float]] = {
            k: []
            for k in (
                "val_acc", "test_acc", "val_proxy", "e_train", "e_val", "e_buffer", "e_noise",
                "norm_data", "norm_buffer", "p_ess", "corr_e_dist_c",
            )
        }  # fmt: skip

    def __call__(self, model, hops_x) -> None:
        was = model.training
        model.eval()
        if self.noise is None:
            gen = torch.Generator().manual_seed(self.seed + NOISE_SEED_OFFSET)
            self.noise = torch.rand(self.nodes["val"].numel(), model.cfg.hidden, generator=gen)
            self.noise = self.noise.to(model.c.device)
        with torch.no_grad():
            energy = lambda q: model.head(q, model.c)
            for name, h in self.graphs.items():
                z = model.encoder(h)
                self.scores[name].append((-energy(z)).cpu().numpy())
                if name == "id":
                    self._record_state(model, z, energy)
        model.train(was)

    def _record_state(self, model, z, energy) -> None:
        tr, va, te = self.nodes["train"], self.nodes["val"], self.nodes["test"]
        log, e = self.log, energy(z)
        pred = model.classifier(z).argmax(dim=1)
        log["val_acc"].append(100 * float((pred[va] == self.y[va]).float().mean()))
        log["test_acc"].append(100 * float((pred[te] == self.y[te]).float().mean()))
        e_noise = energy(self.noise)
        log["val_proxy"].append(auroc(-e[va].cpu().numpy(), -e_noise.cpu().numpy()))
        log["e_train"].append(float(e[tr].mean()))
        log["e_val"].append(float(e[va].mean()))
        log["e_buffer"].append(float(energy(model.buffer).mean()))
        log["e_noise"].append(float(e_noise.mean()))
        log["norm_data"].append(float(z.norm(dim=1).mean()))
        log["norm_buffer"].append(float(model.buffer.norm(dim=1).mean()))
        p = model.p if model.p is not None else torch.full_like(e, 1 / e.numel())
        log["p_ess"].append(float(1 / p.pow(2).sum()) / p.numel())
        log["corr_e_dist_c"].append(_spearman(e[te], (z[te] - model.c).norm(dim=1)))

    @property
    def epochs(self) -> int:
        return len(self.log["val_acc"])


def select_epochs(tracker: EpochTracker, shift_nodes: dict[str, tuple]) -> dict[str, dict]:
    """Epoch (0-based) chosen by each rule, per shift, and the per-epoch AUROC curves.

    shift_nodes: shift -> (graph name of the ID scores, ID node index, graph name of the OOD
    scores, OOD node index). Ties: 'val' keeps the latest best epoch (more training), 'test' the
    first, as the official `metric > best_metric` does.
    """
    curves = {
        s: np.array(
            [
                auroc(tracker.scores[gi][t][ni], tracker.scores[go][t][no])
                for t in range(tracker.epochs)
            ]
        )
        for s, (gi, ni, go, no) in shift_nodes.items()
    }
    val = np.asarray(tracker.log["val_acc"]) + np.asarray(tracker.log["val_proxy"])
    val_epoch = int(len(val) - 1 - np.argmax(val[::-1]))
    test_acc = np.asarray(tracker.log["test_acc"])
    chosen = {
        s: {"last": tracker.epochs - 1, "val": val_epoch, "test": int(np.argmax(c + test_acc))}
        for s, c in curves.items()
    }
    return {"epochs": chosen, "curves": curves}


def trace_summary(tr: dict) -> dict:
    """Last-epoch and summary numbers of one trace.json (diagnostics)."""
    a = {k: np.asarray(v) for k, v in tr.items()}
    return {
        "last_auroc_structure": float(a["auroc_structure"][-1]),
        "last_auroc_feature": float(a["auroc_feature"][-1]),
        "max_auroc_structure": float(a["auroc_structure"].max()),
        "frac_epochs_buffer_below_train": float((a["e_buffer"] < a["e_train"]).mean()),
        "last_p_ess": float(a["p_ess"][-1]),
        "last_corr_e_dist_c": float(a["corr_e_dist_c"][-1]),
        "last_norm_data": float(a["norm_data"][-1]),
        "last_norm_buffer": float(a["norm_buffer"][-1]),
    }


def radial_analysis(metrics: dict, ablation_graphs, graphs) -> dict:
    """Across every DeGEM run of the bench (variants, graphs, seeds): how radial its energy is,
    Spearman(E, |z - c|) on the test nodes at the last epoch, against its AUROC per shift, and the
    AUROC of the radial score -|z - c| itself (DistToReadout). Reported only."""
    xs, ys = [], {s: [] for s in ("structure", "feature", "label")}
    for name, m in metrics.items():
        if not (name == "DeGEM" or name.startswith("DeGEM[")) or name == "DeGEM[untrained]":
            continue
        for gr in ablation_graphs:
            key = f"{gr}/diag_corr_e_dist_c"
            if key not in m:
                continue
            xs += m[key]["values"]
            for s in ys:
                ys[s] += m[f"{gr}/{s}_auroc"]["values"]
    return {
        "what": "per DeGEM run: Spearman(E, |z - c|) vs its AUROC; DistToReadout = AUROC of -|z - c|",
        "n_runs": len(xs),
        "corr_e_dist_c": xs,
        "auroc": ys,
        "spearman_radial_vs_auroc": {s: float(spearmanr(xs, y)[0]) for s, y in ys.items()},
        "dist_to_readout_auroc": {
            gr: {s: metrics["DistToReadout"][f"{gr}/{s}_auroc"]["mean"] for s in ys}
            for gr in graphs
        },
    }
