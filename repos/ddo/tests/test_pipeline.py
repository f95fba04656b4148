"""The pretrained-pipeline path of the image experiment: a local diffusers DDPMPipeline as the
reference, a preference file as the data, the UNet's pooled features as the potential's input,
and the held-out ranking accuracy that the image claims rest on."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from ddo.dual_averaging import Potential, dual_averaging
from ddo.images import (
    FeatureMap,
    PipelineEps,
    colour_reward,
    coloured_shapes,
    load_pipeline,
    load_preferences,
    ranking_accuracy,
    split_pairs,
)

SIZE = 8
DIM = 3 * SIZE * SIZE


def tiny_pipeline(path):
    """A random 8x8 DDPMPipeline saved the way a user's pretrained one is (unet/, scheduler/)."""
    from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel

    torch.manual_seed(0)
    unet = UNet2DModel(
        sample_size=SIZE, in_channels=3, out_channels=3, block_out_channels=(8, 16),
        layers_per_block=1, down_block_types=("DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=4,
    )  # fmt: skip
    DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=1000)).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory):
    return tiny_pipeline(tmp_path_factory.mktemp("pipe") / "pipeline")


def test_pipeline_timestep_inverts_the_schedulers_alpha_bar(pipeline_dir):
    model = load_pipeline(pipeline_dir, SIZE, "cpu")
    from diffusers import DDPMScheduler

    abar = DDPMScheduler.from_pretrained(pipeline_dir / "scheduler").alphas_cumprod
    taus = torch.tensor([0, 1, 17, 500, 998, 999])
    t = -0.5 * abar[taus].double().log()
    assert torch.allclose(model.timestep(t.float()), taus.float(), atol=2e-2)
    mid = 0.5 * (t[2] + -0.5 * abar[18].double().log())  # between steps 17 and 18
    assert 17 < float(model.timestep(mid[None].float())) < 18
    x, tt = torch.randn(3, DIM), torch.tensor([0.01, 0.5, 3.0])
    with torch.no_grad():  # the raw UNet at the mapped timestep: no preconditioning
        direct = model.unet(x.reshape(3, 3, SIZE, SIZE), model.timestep(tt)).sample
        assert torch.allclose(model(x, tt), direct.reshape(3, -1), atol=1e-6)
    v = 1 - torch.exp(-2 * tt)
    assert torch.allclose(model.score(x, tt), -direct.reshape(3, -1) / v.sqrt()[:, None])
    with pytest.raises(ValueError, match="scheduler's range"):
        model.timestep(torch.tensor([6.0]))


def test_bad_pipeline_folders_name_the_folder(pipeline_dir, tmp_path):
    with pytest.raises(ValueError, match=f"{tmp_path}.*unet/ and scheduler/"):
        load_pipeline(tmp_path, SIZE, "cpu")
    with pytest.raises(ValueError, match="sample_size 16"):
        load_pipeline(pipeline_dir, 16, "cpu")
    assert isinstance(load_pipeline(pipeline_dir, SIZE, "cpu"), PipelineEps)


def test_preference_file_round_trip_and_errors(tmp_path):
    g = torch.Generator().manual_seed(0)
    w, lose = coloured_shapes(6, SIZE, g), coloured_shapes(6, SIZE, g)
    np.savez(tmp_path / "f.npz", winners=w.numpy(), losers=lose.numpy())
    x_w, x_l = load_preferences(tmp_path / "f.npz", SIZE)
    assert torch.equal(x_w, w.reshape(6, -1)) and torch.equal(x_l, lose.reshape(6, -1))
    as_uint8 = ((w + 1) * 127.5).round().numpy().astype(np.uint8)
    np.savez(tmp_path / "u.npz", winners=as_uint8, losers=as_uint8)
    assert torch.allclose(load_preferences(tmp_path / "u.npz", SIZE)[0], x_w, atol=1 / 127)
    np.savez(tmp_path / "bad.npz", winners=w.numpy())
    with pytest.raises(ValueError, match=r"bad\.npz.*'losers'"):
        load_preferences(tmp_path / "bad.npz", SIZE)
    np.savez(tmp_path / "shape.npz", winners=w.numpy(), losers=w[:, :2].numpy())
    with pytest.raises(ValueError, match=r"shape\.npz: 'losers' must have shape"):
        load_preferences(tmp_path / "shape.npz", SIZE)
    np.savez(tmp_path / "range.npz", winners=3 * w.numpy(), losers=w.numpy())
    with pytest.raises(ValueError, match=r"range\.npz: 'winners' must be finite"):
        load_preferences(tmp_path / "range.npz", SIZE)


def test_ranking_accuracy_counts_pairs_ranked_like_the_label():
    g = torch.Generator().manual_seed(0)
    x1, x2 = coloured_shapes(200, SIZE, g).reshape(200, -1), coloured_shapes(200, SIZE, g)
    x2 = x2.reshape(200, -1)
    r1, r2 = colour_reward(x1), colour_reward(x2)
    win = torch.where((r1 > r2)[:, None], x1, x2)
    lose = torch.where((r1 > r2)[:, None], x2, x1)

    def potential(x):  # q ~ p e^{-f}: the preferred image has the lower potential
        return -colour_reward(x)

    acc = ranking_accuracy(potential, win, lose)
    assert acc[""] == 1.0
    assert ranking_accuracy(potential, lose, win)[""] == 0.0
    assert ranking_accuracy(lambda x: torch.zeros(x.shape[0]), win, lose)[""] == 0.5  # ties
    half = ranking_accuracy(potential, torch.cat([win, lose]), torch.cat([lose, win]))
    assert half[""] == 0.5
    assert math.isclose(half["_high"] - half[""], 1.96 * math.sqrt(0.25 / 400), rel_tol=1e-9)


def test_feature_potential_trains_only_its_head_and_caches(pipeline_dir):
    model = load_pipeline(pipeline_dir, SIZE, "cpu")
    g = torch.Generator().manual_seed(0)
    pool = coloured_shapes(64, SIZE, g).reshape(64, -1)
    features = FeatureMap(model, 0.05, pool)
    phi = features(pool)
    assert phi.shape == (64, features.dim) and features(pool) is phi  # cached on identity
    assert torch.allclose(phi.mean(0), torch.zeros(features.dim), atol=1e-4)  # standardised
    assert torch.allclose(phi.std(0), torch.ones(features.dim), atol=1e-3)
    model.chunk = 10  # chunked feature extraction gives the same features
    assert torch.allclose(features(pool.clone()), phi, atol=1e-4)
    pot = Potential(DIM, 16, features)
    assert sum(p.numel() for p in pot.parameters()) < 5000  # the UNet is no submodule
    assert copy.deepcopy(pot).features is features
    before = {k: v.clone() for k, v in model.state_dict().items()}
    pots = dual_averaging(
        "dpo", lambda n: pool[:n], lambda x: colour_reward(x), 2, 64, 1.0, 1.0, 1.0, 30, 1e-2,
        16, features=features,
    )  # fmt: skip
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert not torch.equal(pots[-1](pool), pots[0](pool))  # the head moved


@pytest.mark.parametrize("n", [2, 3, 10, 101])
def test_preference_split_is_disjoint_and_covers_every_pair(n):
    train, held = split_pairs(n, torch.Generator().manual_seed(n))
    assert len(train) and len(held) and len(train) + len(held) == n
    assert not set(train.tolist()) & set(held.tolist())
    assert sorted(train.tolist() + held.tolist()) == list(range(n))
