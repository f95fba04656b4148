"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through.

One seed of the whole protocol: gold model and resampled labels, classifier h, the pairs of
Q(x+|x), the GenRe pair model, then every recourse method on the same test negatives.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from . import baselines, classifiers, data, metrics
from .binned_transformer import PairTransformer, genre_recourse
from .config import Config, validate
from .pairs import partner_sets, sample_partners
from .results import atomic_write_json

CHECKPOINT = "pair_model.safetensors"


def fit_pair_model(
    cfg: Config,
    x_neg: torch.Tensor,
    y_neg: torch.Tensor,
    x_pos: torch.Tensor,
    immutable: torch.Tensor,
) -> PairTransformer:
    """Maximum likelihood on pairs (x, x+ ~ Q(.|x)), one partner resampled per epoch; the
    weights with the best validation loss (90/10 split of the negatives) are kept."""
    index, prob, has = partner_sets(x_neg, x_pos, cfg.lam, cfg.top_k, immutable)
    x_neg, y_neg, index, prob = x_neg[has], y_neg[has], index[has], prob[has]
    g = torch.Generator().manual_seed(cfg.seed)
    order = torch.randperm(len(x_neg), generator=g)
    n_val = max(1, len(order) // 10)
    val, tr = order[:n_val], order[n_val:]
    torch.manual_seed(cfg.seed)
    model = PairTransformer(
        x_neg.shape[1], cfg.n_bins, cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.d_ff, cfg.dropout
    ).to(cfg.device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    ones = torch.ones(cfg.batch_size, device=cfg.device)
    dev = lambda t: t.to(cfg.device)
    val_partner = dev(x_pos[sample_partners(index[val], prob[val], g)])
    best, best_state = float("inf"), None
    quiet = cfg.quiet or not sys.stderr.isatty()
    bar = tqdm(range(cfg.epochs), desc="GenRe", disable=quiet, leave=False)
    for _ in bar:
        model.train()
        partner = x_pos[sample_partners(index[tr], prob[tr], g)]
        for b in torch.randperm(len(tr), generator=g).split(cfg.batch_size):
            xb, yb, pb = dev(x_neg[tr][b]), dev(y_neg[tr][b]), dev(partner[b])
            loss = model.loss(xb, yb, pb, ones[: len(b)]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            v = float(
                model.loss(
                    dev(x_neg[val]),
                    dev(y_neg[val]),
                    val_partner,
                    torch.ones(n_val, device=cfg.device),
                ).mean()
            )
        if v < best:
            best, best_state = v, {k: t.detach().clone() for k, t in model.state_dict().items()}
        bar.set_postfix(train=f"{loss.item():.3f}", val=f"{v:.3f}")
    model.load_state_dict(best_state)
    return model.eval()


def run_protocol(cfg: Config, workdir: Path) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Everything for one seed; returns flat metrics "Method/metric" and the recourses."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    tab = data.load(cfg.dataset, cfg.data_path, cfg.schema_path, cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    x = tab.x
    if cfg.max_rows and len(x) > cfg.max_rows:
        keep = rng.choice(len(x), cfg.max_rows, replace=False)
        x, y0 = x[keep], tab.y[keep]
    else:
        y0 = tab.y
    gold = classifiers.fit_gold(x, y0, cfg.rf_trees, cfg.seed)  # on all rows: ground truth
    y = classifiers.resample_labels(classifiers.gold_proba(gold, x), cfg.seed)
    order = rng.permutation(len(x))
    tr, te = order[: int(0.8 * len(x))], order[int(0.8 * len(x)) :]
    h = classifiers.train_classifier(x[tr], y[tr], cfg.clf_epochs, cfg.seed)
    xt = torch.as_tensor(x)
    p_h = h(xt).numpy()
    immutable, categorical = torch.as_tensor(tab.immutable), torch.as_tensor(tab.categorical)
    neg_mask, pos_mask = p_h[tr] <= cfg.gamma, (p_h[tr] > cfg.gamma) & (y[tr] == 1)
    x_pos = xt[tr][pos_mask]
    if len(x_pos) == 0:
        raise ValueError(
            f"D+ is empty: no training point has h > gamma = {cfg.gamma} and y = 1 "
            "(train the classifier longer or lower --gamma)"
        )
    ckpt = workdir / CHECKPOINT
    if cfg.resume and ckpt.exists():
        model = PairTransformer(
            x.shape[1], cfg.n_bins, cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.d_ff, cfg.dropout
        )
        model.load_state_dict(load_file(ckpt))
        model = model.to(cfg.device).eval()
    else:
        model = fit_pair_model(
            cfg, xt[tr][neg_mask], torch.as_tensor(y[tr][neg_mask]).float(), x_pos, immutable
        )
        tmp = workdir / f".{CHECKPOINT}.tmp"
        save_file({k: v.contiguous().cpu() for k, v in model.state_dict().items()}, tmp)
        tmp.replace(ckpt)  # atomic: same folder
    negatives = te[p_h[te] < 0.5][: cfg.n_negatives]
    if len(negatives) == 0:
        raise ValueError("the classifier calls no test point negative; nothing to explain")
    x_neg = xt[negatives]
    lof = metrics.fit_lof(x[tr][classifiers.gold_proba(gold, x[tr]) > 0.5])
    g = torch.Generator().manual_seed(cfg.seed)
    h_dev = copy.deepcopy(h).to(cfg.device)
    vae = baselines.fit_vae(x[tr], cfg.vae_epochs, cfg.seed) if "REVISE" in cfg.methods else None
    runners = {
        "GenRe": lambda xn: genre_recourse(
            model,
            h_dev,
            xn.to(cfg.device),
            immutable,
            categorical,
            cfg.temperature,
            cfg.best_k,
            g if cfg.device == "cpu" else None,
        ).cpu(),
        "NNR": lambda xn: baselines.nnr(xn, x_pos, immutable),
        "Wachter": lambda xn: baselines.wachter(xn, h, immutable, categorical),
        "GrowingSpheres": lambda xn: baselines.growing_spheres(xn, h, immutable, categorical, g),
        "REVISE": lambda xn: baselines.revise(xn, h, vae, immutable, categorical),
        "DiCE": lambda xn: torch.as_tensor(
            baselines.dice(
                xn.numpy(),
                x[tr],
                y[tr],
                h,
                list(tab.features),
                tab.immutable,
                tab.categorical,
                cfg.seed,
            )
        ),
    }
    out, cfs = {}, {"x": x_neg.numpy(), "train_x": x[tr], "train_y": y[tr]}
    for name in cfg.methods:
        xn = x_neg[: cfg.dice_negatives] if name == "DiCE" else x_neg
        start = time.perf_counter()
        cf = runners[name](xn)
        seconds = time.perf_counter() - start
        cf = cf.detach().numpy()
        with torch.no_grad():
            p_cf = h(torch.as_tensor(cf)).numpy()
        row = metrics.summarize_recourse(
            xn.numpy(),
            cf,
            classifiers.gold_proba(gold, cf),
            p_cf,
            lof,
            seconds,
            tab.immutable,
            tab.categorical,
        )
        out.update({f"{name}/{k}": v for k, v in row.items()})
        cfs[name] = cf
    out["data/n_negatives"] = float(len(negatives))
    out["data/n_pos_partners"] = float(len(x_pos))
    return out, cfs


def train_and_evaluate_with_recourses(
    cfg: Config, workdir: str | Path
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """train_and_evaluate that also returns the recourses (the benchmark plots them)."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    result, recourses = run_protocol(cfg, workdir)
    atomic_write_json(workdir / "metrics.json", result)
    return result, recourses


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Run one seed of the protocol and return its metrics; writes workdir/config.json first."""
    return train_and_evaluate_with_recourses(cfg, workdir)[0]


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
