"""Comparison methods, each `fn(x_neg) -> x_cf` on the scaled features, like genre_recourse.

NNR is the lambda -> infinity limit of GenRe's target (official recourse/nnr.py); Wachter and
Growing Spheres are written here after their papers (CARLA's versions are not installable), as
is REVISE (a small VAE and a gradient search in its latent space); DiCE comes from dice-ml.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn

from .binned_transformer import project
from .pairs import partner_sets


def nnr(x: torch.Tensor, x_pos: torch.Tensor, immutable: torch.Tensor) -> torch.Tensor:
    """Nearest (L1) member of D+ that shares x's immutable features."""
    idx, _, has = partner_sets(x, x_pos, lam=1.0, top_k=1, immutable=immutable)
    if not has.all():
        raise ValueError(
            f"rows {torch.nonzero(~has).flatten().tolist()[:10]} have no admissible partner"
        )
    return x_pos[idx[:, 0]]


def wachter(
    x: torch.Tensor,
    h: nn.Module,
    immutable,
    categorical,
    steps: int = 300,
    lr: float = 0.01,
    lams: tuple[float, ...] = (1.0, 0.1, 0.01, 0.001),
) -> torch.Tensor:
    """min_x' BCE(h(x'), 1) + lam ||x' - x||_1 by Adam, relaxing lam until h(x') > 0.5
    (Wachter et al. 2017's lambda search). Mutable features only, kept in [0, 1]."""
    mutable = (~immutable).float()
    return _lambda_search(
        x, h, immutable, categorical, steps, lr, lams,
        start=torch.zeros_like,
        decode=lambda delta, x0: (x0 + delta * mutable).clamp(0, 1),
    )  # fmt: skip


def _lambda_search(x, h, immutable, categorical, steps, lr, lams, start, decode) -> torch.Tensor:
    """The search Wachter and REVISE share: for each lam in turn, over the rows h has not yet
    flipped, minimise BCE(h(c), 1) + lam ||c - x||_1 by Adam over a variable v (initialised by
    start(x)) with candidate c = decode(v, x); rows whose projected candidate h flips are done."""
    best = x.clone()
    todo = torch.ones(len(x), dtype=torch.bool)
    for lam in lams:
        if not todo.any():
            break
        x0 = x[todo]
        v = start(x0).detach().clone().requires_grad_(True)
        opt = torch.optim.Adam([v], lr=lr)
        for _ in range(steps):
            cand = decode(v, x0)
            p = h(cand)
            loss = nn.functional.binary_cross_entropy(p, torch.ones_like(p), reduction="sum")
            loss = loss + lam * (cand - x0).abs().sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            cand = project(decode(v, x0), x0, immutable, categorical)
            best[todo] = cand
            done = torch.zeros_like(todo)
            done[todo] = h(cand) > 0.5
            todo &= ~done
    return best


def growing_spheres(
    x: torch.Tensor,
    h: nn.Module,
    immutable,
    categorical,
    generator: torch.Generator,
    n_samples: int = 500,
    eta: float = 0.05,
    max_layers: int = 60,
) -> torch.Tensor:
    """Growing Spheres (Laugel et al. 2018): sample L2 shells of growing radius until h flips,
    keep the closest flip, then zero out the smallest moves while h stays positive."""
    d = x.shape[1]
    mutable = ~immutable
    out = x.clone()
    for i in range(len(x)):
        x0, found = x[i], None
        for layer in range(max_layers):
            direction = torch.randn(n_samples, d, generator=generator)
            direction[:, immutable] = 0
            direction = direction / direction.norm(dim=1, keepdim=True).clamp_min(1e-12)
            radius = eta * (layer + torch.rand(n_samples, 1, generator=generator))
            cand = project(
                (x0 + radius * direction).clamp(0, 1),
                x0.expand(n_samples, -1),
                immutable,
                categorical,
            )
            ok = h(cand) > 0.5
            if ok.any():
                good = cand[ok]
                found = good[(good - x0).norm(dim=1).argmin()].clone()
                break
        if found is None:
            continue
        for j in (found - x0).abs().argsort():  # feature selection: smallest moves first
            if not mutable[j] or found[j] == x0[j]:
                continue
            trial = found.clone()
            trial[j] = x0[j]
            if h(trial[None])[0] > 0.5:
                found = trial
        out[i] = found
    return out


VAE_SIGMA = 0.1


class VAE(nn.Module):
    """A small MLP VAE on the scaled features; the decoder's sigmoid keeps outputs in [0, 1]."""

    def __init__(self, d: int, latent: int = 4, hidden: int = 32):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.mean, self.log_var = nn.Linear(hidden, latent), nn.Linear(hidden, latent)
        self.decoder = nn.Sequential(
            nn.Linear(latent, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, d),
            nn.Sigmoid(),
        )

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        e = self.encoder(x)
        return self.mean(e), self.log_var(e)

    def loss(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Negative ELBO per row (up to a constant) with a Gaussian decoder of fixed width
        sigma = 0.1, so that on [0, 1]-scaled data reconstruction is not drowned by the KL term:
        ||x - G(z)||^2 / (2 sigma^2) + KL(q(z|x) || N(0, I))."""
        mu, log_var = self.encode(x)
        eps = torch.randn(mu.shape, generator=generator)
        recon = self.decoder(mu + (0.5 * log_var).exp() * eps)
        kl = 0.5 * (mu**2 + log_var.exp() - 1 - log_var).sum(1)
        return ((recon - x) ** 2).sum(1) / (2 * VAE_SIGMA**2) + kl


def fit_vae(x: np.ndarray, epochs: int, seed: int, batch: int = 128) -> VAE:
    """REVISE's generative model, fitted on the training rows (Adam 1e-3)."""
    torch.manual_seed(seed)
    vae = VAE(x.shape[1])
    opt = torch.optim.Adam(vae.parameters(), lr=1e-3)
    xt, g = torch.as_tensor(x), torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for idx in torch.randperm(len(xt), generator=g).split(batch):
            loss = vae.loss(xt[idx], g).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return vae.eval().requires_grad_(False)


def revise(
    x: torch.Tensor,
    h: nn.Module,
    vae: VAE,
    immutable,
    categorical,
    steps: int = 300,
    lr: float = 0.05,
    lams: tuple[float, ...] = (1.0, 0.1, 0.01),
) -> torch.Tensor:
    """REVISE (Joshi et al. 2019): start from z = E(x), minimise BCE(h(G(z)), 1) + lam
    ||G(z) - x||_1 over z by Adam, relaxing lam until h flips; immutables copied back and
    categoricals rounded before h judges the result."""
    return _lambda_search(
        x, h, immutable, categorical, steps, lr, lams,
        start=lambda x0: vae.encode(x0)[0],
        decode=lambda z, x0: torch.where(immutable, x0, vae.decoder(z)),  # h never sees a changed immutable
    )  # fmt: skip


class _ProbaWrapper:
    """Gives the torch classifier the predict_proba of a sklearn model, as dice-ml expects."""

    def __init__(self, h: nn.Module, features: list[str]):
        self.h, self.features = h, features

    def predict_proba(self, df: pd.DataFrame) -> np.ndarray:
        x = torch.as_tensor(df[self.features].to_numpy(dtype=np.float32))
        with torch.no_grad():
            p = self.h(x).numpy()
        return np.stack([1 - p, p], 1)

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        return (self.predict_proba(df)[:, 1] > 0.5).astype(int)


class Dice:
    """DiCE's model-agnostic random search (dice-ml), set up once on the training rows; each
    call explains rows one at a time (one counterfactual per negative)."""

    def __init__(
        self,
        x_train: np.ndarray,
        y_train: np.ndarray,
        h: nn.Module,
        features: list[str],
        immutable: np.ndarray,
        categorical: np.ndarray,
    ):
        import dice_ml

        frame = pd.DataFrame(x_train.astype(np.float64), columns=features).assign(label=y_train)
        self.features = features
        self.cats = [f for f, c in zip(features, categorical) if c]
        frame[self.cats] = frame[self.cats].round().astype(int).astype(str)
        conts = [f for f, c in zip(features, categorical) if not c]
        data = dice_ml.Data(dataframe=frame, continuous_features=conts, outcome_name="label")
        model = dice_ml.Model(model=_ProbaWrapper(h, features), backend="sklearn")
        self.explainer = dice_ml.Dice(data, model, method="random")
        self.vary = [f for f, m in zip(features, immutable) if not m]

    def __call__(self, x: np.ndarray, seed: int, stopping_threshold: float = 0.5) -> np.ndarray:
        """Stops once h(x') exceeds `stopping_threshold`; a negative for which DiCE finds
        nothing keeps x itself (counted invalid)."""
        from raiutils.exceptions import UserConfigValidationException

        out = x.copy()
        for i in range(len(x)):
            query = pd.DataFrame(x[i : i + 1].astype(np.float64), columns=self.features)
            query[self.cats] = query[self.cats].round().astype(int).astype(str)
            try:
                res = self.explainer.generate_counterfactuals(
                    query,
                    total_CFs=1,
                    desired_class=1,
                    features_to_vary=self.vary,
                    stopping_threshold=stopping_threshold,
                    random_seed=seed,
                    verbose=False,
                )
            except UserConfigValidationException:  # raised when no counterfactual is found
                continue
            cf = res.cf_examples_list[0].final_cfs_df
            if cf is not None and len(cf):
                out[i] = cf[self.features].astype(float).to_numpy()[0]
        return out
