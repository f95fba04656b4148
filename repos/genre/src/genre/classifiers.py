"""The semi-synthetic ground truth and the classifier under audit (official scripts/train_*.py).

The gold model is an isotonic-calibrated random forest fitted on all rows with balanced
weights; labels are then resampled from its probabilities, so the true P(y=1|x) is known.
The audited classifier h is a 10-10-10 MLP trained on the resampled labels with balanced
class weights.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import RandomForestClassifier
from sklearn.utils.class_weight import compute_sample_weight
from torch import nn


def fit_gold(x: np.ndarray, y: np.ndarray, trees: int, seed: int) -> CalibratedClassifierCV:
    rf = RandomForestClassifier(n_estimators=trees, random_state=seed, n_jobs=1)
    gold = CalibratedClassifierCV(rf, method="isotonic", cv=3)
    return gold.fit(x, y, sample_weight=compute_sample_weight("balanced", y))


def gold_proba(gold: CalibratedClassifierCV, x: np.ndarray | torch.Tensor) -> np.ndarray:
    x = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x
    return gold.predict_proba(np.asarray(x, dtype=np.float32))[:, 1]


def resample_labels(p: np.ndarray, seed: int) -> np.ndarray:
    """y ~ Bernoulli(p_gold(x)): the labels every later model sees."""
    return (np.random.default_rng(seed).random(len(p)) < p).astype(np.int64)


class MLP(nn.Module):
    """h(x) = sigmoid(MLP(x)), hidden 10-10-10 as in the official train_ann.py."""

    def __init__(self, d: int, hidden: tuple[int, ...] = (10, 10, 10)):
        super().__init__()
        layers, width = [], d
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.net = nn.Sequential(*layers, nn.Linear(width, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(x)).squeeze(-1)


def train_classifier(
    x: np.ndarray, y: np.ndarray, epochs: int, seed: int, balanced: bool = True
) -> MLP:
    """Adam 1e-3, batch 64, BCE; with `balanced` each row is weighted by
    n / (2 n_class) (sklearn's 'balanced', the official CALIBRATED=True of train_ann.py)."""
    torch.manual_seed(seed)
    h = MLP(x.shape[1])
    opt = torch.optim.Adam(h.parameters(), lr=1e-3)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y, dtype=torch.float32)
    weight = compute_sample_weight("balanced", y) if balanced else np.ones(len(y))
    wt = torch.as_tensor(weight, dtype=torch.float32)
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for idx in torch.randperm(len(xt), generator=g).split(64):
            loss = nn.functional.binary_cross_entropy(h(xt[idx]), yt[idx], weight=wt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return h.eval().requires_grad_(False)
