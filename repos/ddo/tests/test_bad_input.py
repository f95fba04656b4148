"""Bad input: clear errors naming the value, warnings with the ESS instead of a division by zero."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from ddo import baselines
from ddo.config import PRESETS, validate
from ddo.dual_averaging import da_weights, dual_averaging
from ddo.objectives import pairwise_dpo_loss


@pytest.mark.parametrize("beta", [0.0, -1.0])
def test_nonpositive_beta_is_rejected(beta):
    with pytest.raises(ValueError, match="beta must be > 0"):
        validate(dataclasses.replace(PRESETS["quick"], beta=beta))
    with pytest.raises(ValueError, match="beta"):
        dual_averaging(
            "dpo", lambda n: torch.randn(n, 2), lambda x: x[:, 0], 1, 8, beta, 1.0, 1.0, 1, 0.1
        )
    with pytest.raises(ValueError, match="beta > 0"):
        da_weights(0, beta, 1.0)


def test_mismatched_preference_pairs_are_rejected():
    net = baselines.ScoreNet(2, 8)
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match=r"equal shape.*\(5, 2\) and \(4, 2\)"):
        baselines.diffusion_dpo_loss(
            net, net, torch.zeros(5, 2), torch.zeros(4, 2), 1.0, 1e-3, 5.0, g
        )
    with pytest.raises(ValueError, match="equal shape"):
        baselines.diffusion_dpo(
            net, torch.zeros(5, 2), torch.zeros(5, 3), 1, 2, 1e-3, 1.0, 1e-3, 5.0, g
        )
    with pytest.raises(ValueError, match="differ in shape"):
        pairwise_dpo_loss(torch.zeros(5), torch.zeros(4), 1.0)


def test_degenerate_importance_weights_warn_with_ess():
    g = torch.Generator().manual_seed(0)
    pool = torch.randn(1000, 2)
    logw = torch.full((1000,), -1e4)
    logw[3] = 0.0  # one sample carries all the weight
    with pytest.warns(RuntimeWarning, match=r"effective sample size 1\.0 of 1000"):
        x, ess = baselines.importance_resample(pool, logw, 50, g)
    assert ess == pytest.approx(1.0) and torch.equal(x, pool[[3] * 50])
    with pytest.raises(ValueError, match="non-finite"):
        baselines.importance_resample(pool, torch.full((1000,), float("nan")), 5, g)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"image_size": 15}, "must be divisible"),
        ({"image_channels": ()}, "image_channels needs at least 1 value"),
        ({"image_channels": (0, 8)}, "image_channels must be >= 1 for every entry"),
        ({"image_temperature": 0.0}, "image_temperature must be > 0"),
        ({"image_potential": "clip"}, "image_potential must be one of"),
        ({"image_pipeline": "/no/such/pipeline"}, "image_pipeline: /no/such/pipeline does not"),
    ],
)
def test_bad_image_config_is_rejected(change, message):
    with pytest.raises(ValueError, match=message):
        validate(dataclasses.replace(PRESETS["full"], device="cpu", **change))
