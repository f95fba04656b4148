"""Localisation by likelihood ranking: the posterior over a finite set of candidate cameras.

A model of the GEN order alone, [o][GEN][c][i], never sees the target image before the camera,
so sampling c gives p(c | o), not localisation. Bayes' rule gives the localisation posterior from
the joint distribution the paper factorises, p(c | o, i) ~ p(c | o) p(i | o, c); over candidate
cameras it is the full teacher-forced log-likelihood of the GEN sequence. For an EST-order model
the posterior is log p(c | o, i) directly (log p(i | o) does not depend on c). Candidates are the
relative cameras of the first `pose_candidates` distinct training pairs; the prediction is the
true camera of the best candidate, so the oracle pick among the candidates is the ceiling.
"""

from __future__ import annotations

import numpy as np
import torch

from . import sequence
from .geometry import geodesic_deg
from .metrics import pose_metrics

ORDER = {"gst": "est", "gst_gen": "gen", "pose_only": "est"}
"""The order each method localises in when ranking (gst_gen has only GEN)."""

SCORED = {"gen": ("camera", "image"), "est": ("camera",)}
"""Segments whose log-likelihood depends on the candidate camera, per order."""


def candidates(prep, k: int) -> np.ndarray:
    """Indices of the first k training pairs with distinct camera codes."""
    cams = prep.codes["train"]["cam"].numpy()
    _, first = np.unique(cams, axis=0, return_index=True)
    return np.sort(first)[:k]


@torch.no_grad()
def scores(model, prep, order: str, cand: np.ndarray, chunk: int = 2048) -> torch.Tensor:
    """(n_test, n_candidates) log-likelihood of each candidate camera's segments in `order`."""
    c, vocab = prep.codes["test"], prep.vocab
    cams = prep.codes["train"]["cam"][torch.from_numpy(cand)]
    k = len(cand)
    device = next(model.parameters()).device
    per_row = max(1, chunk // k)
    out = []
    for start in range(0, len(c["obs"]), per_row):
        rows = torch.arange(start, min(start + per_row, len(c["obs"])))
        obs = c["obs"][rows].repeat_interleave(k, 0)
        tgt = c["tgt"][rows].repeat_interleave(k, 0)
        tokens, seg = sequence.build(vocab, obs, cams.repeat(len(rows), 1), tgt, order)
        tokens, seg = tokens.to(device), seg.to(device)
        first = sequence.first_trained_position(seg, SCORED[order])
        logp = -torch.nn.functional.cross_entropy(
            model(tokens, seg, logits_from=first)[:, :-1].transpose(1, 2),
            tokens[:, first + 1 :],
            reduction="none",
        )
        kinds = [sequence.SEGMENT_KIND[s] for s in SCORED[order]]
        keep = torch.isin(seg[:, first + 1 :], torch.tensor(kinds, device=device))
        out.append((logp * keep).sum(1).view(len(rows), k).cpu())
    return torch.cat(out)


def rank_pose_metrics(cfg, prep, model, order: str) -> dict[str, float]:
    """Pose metrics of the most likely candidate (prefixed rank_) and of the oracle candidate
    (rank_oracle_: the nearest candidate to the truth, the ceiling of this evaluation)."""
    cand = candidates(prep, cfg.pose_candidates)
    best = cand[scores(model, prep, order, cand).argmax(1).numpy()]
    tr, te = prep.train, prep.test
    ang = geodesic_deg(tr.rotation[cand][None], te.rotation[:, None])
    oracle = cand[ang.argmin(1)]
    out = {}
    for prefix, idx in (("rank_", best), ("rank_oracle_", oracle)):
        m = pose_metrics(tr.rotation[idx], tr.translation[idx], te.rotation, te.translation)
        out.update({prefix + key: value for key, value in m.items()})
    return out
