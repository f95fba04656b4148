"""Baselines keep immutables and categoricals, stay in [0, 1] and flip a simple classifier;
REVISE's VAE learns; on a COMPAS-format table every method respects the constraints."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from genre import baselines
from genre.train import train_and_evaluate

IMMUTABLE = torch.tensor([True, False, False, False])
CATEGORICAL = torch.tensor([True, False, True, False])


class Linear(nn.Module):
    """h(x) = sigmoid(8 (x_1 + x_3 - 1)): flips once the two mutable continuous features grow."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(8 * (x[:, 1] + x[:, 3] - 1))


def _data(n=400, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 4, generator=g)
    x[:, [0, 2]] = x[:, [0, 2]].round()
    return x


@pytest.mark.parametrize("method", ["wachter", "growing_spheres", "revise"])
def test_baselines_respect_constraints_and_flip(method):
    x_train, h = _data(), Linear()
    x = _data(40, 1)
    x = x[h(x) < 0.5]
    g = torch.Generator().manual_seed(0)
    if method == "wachter":
        cf = baselines.wachter(x, h, IMMUTABLE, CATEGORICAL)
    elif method == "growing_spheres":
        cf = baselines.growing_spheres(x, h, IMMUTABLE, CATEGORICAL, g)
    else:
        vae = baselines.fit_vae(x_train.numpy(), epochs=30, seed=0)
        cf = baselines.revise(x, h, vae, IMMUTABLE, CATEGORICAL)
    assert cf.min() >= 0 and cf.max() <= 1
    assert torch.equal(cf[:, 0], x[:, 0])
    assert torch.equal(cf[:, 2], cf[:, 2].round())
    assert (h(cf) > 0.5).float().mean() >= 0.9


def test_vae_learns_a_curve():
    """On points of a 1-D curve in [0, 1]^4 the VAE's loss falls and its reconstructions
    explain most of the variance."""
    t = torch.rand(400, 1, generator=torch.Generator().manual_seed(0))
    x = torch.cat([t, t**2, 1 - t, 0.5 + 0.4 * torch.sin(6 * t)], 1)
    untrained = baselines.fit_vae(x.numpy(), epochs=0, seed=0)
    trained = baselines.fit_vae(x.numpy(), epochs=30, seed=0)
    g = lambda: torch.Generator().manual_seed(0)
    assert trained.loss(x, g()).mean() < 0.5 * untrained.loss(x, g()).mean()
    recon = trained.decoder(trained.encode(x)[0])
    assert ((recon - x) ** 2).sum(1).mean() < 0.25 * x.var(0).sum()


def _compas_like(path, n=600, seed=0):
    """A COMPAS-format CSV (ProPublica columns) whose score depends on age and priors."""
    rng = np.random.default_rng(seed)
    age, priors = rng.integers(18, 70, n), rng.poisson(3, n)
    low = rng.random(n) < 1 / (1 + np.exp(-(age - 35) / 8 + (priors - 3) / 2))
    stay = rng.integers(0, 9, n)
    pd.DataFrame(
        {
            "age": age,
            "two_year_recid": rng.integers(0, 2, n),
            "priors_count": priors,
            "days_b_screening_arrest": 0,
            "is_recid": 0,
            "c_charge_degree": rng.choice(["F", "M"], n),
            "score_text": np.where(low, "Low", "High"),
            "race": rng.choice(["African-American", "Caucasian"], n),
            "sex": rng.choice(["Male", "Female"], n),
            "c_jail_in": "2013-01-01 00:00:00",
            "c_jail_out": [f"2013-01-{d + 1:02d} 00:00:00" for d in stay],
        }
    ).to_csv(path, index=False)


def test_every_method_respects_compas_immutables_and_categoricals(tiny, tmp_path):
    _compas_like(tmp_path / "compas.csv")
    cfg = dataclasses.replace(
        tiny, dataset="compas", data_path=str(tmp_path / "compas.csv"), n_negatives=20
    )
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    for name in cfg.methods:
        assert metrics[f"{name}/constraint_violations"] == 0.0, name
