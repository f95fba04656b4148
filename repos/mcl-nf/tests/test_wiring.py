"""The method's wiring: FIM weights and their arguments, step numbering, coordinate ranges,
the train / held-out separation, OL's step count, the forgetting sign and --methods."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from PIL import Image

from mcl_nf import baselines, data, testtime, train
from mcl_nf.modular import (
    adapt,
    broadcast,
    fim_weights,
    information_gain,
    init_params,
    point_losses,
)


def tiny_problem(hidden=6, n_modules=3, m=7):
    module, params = init_params(hidden, 30.0, seed=0)
    g = torch.Generator().manual_seed(1)
    coords = torch.rand(n_modules, m, 2, generator=g) * 2 - 1
    targets = torch.rand(n_modules, m, 3, generator=g)
    return module, params, coords, targets


def test_fim_weights_grow_with_information_gain_and_average_one():
    gain = torch.tensor([[0.1, 0.2, 0.4, 3.0], [1.0, 1.0, 1.0, 1.0]])
    w = fim_weights(gain, lam=2.0)
    assert torch.all(w[0, 1:] > w[0, :-1])  # more information, more weight
    torch.testing.assert_close(w.mean(-1), torch.ones(2))
    torch.testing.assert_close(w[1], torch.ones(4))
    expected = 1 + 2.0 * gain[0] / gain[0].mean()
    torch.testing.assert_close(w[0], expected / expected.mean())


def test_fim_inner_step_is_the_hand_weighted_sgd_step():
    """adapt(fim=(lam, damping)): weights from the information gain at damping, strength lam."""
    module, params, coords, targets = tiny_problem()
    lam, damping, lr = 3.0, 0.05, 0.05
    stepped = adapt(module, broadcast(params, 3), coords, targets, 1, lr, fim=(lam, damping))
    p = {k: v.clone().requires_grad_() for k, v in broadcast(params, 3).items()}
    w = fim_weights(information_gain(module, p, coords, damping), lam)
    loss = (point_losses(module, p, coords, targets) * w).mean(-1).sum()
    grads = torch.autograd.grad(loss, list(p.values()))
    for (k, v), gr in zip(p.items(), grads):
        torch.testing.assert_close(stepped[k], v - lr * gr)
    plain = adapt(module, broadcast(params, 3), coords, targets, 1, lr)
    assert not torch.allclose(stepped["layers.2.bias"], plain["layers.2.bias"])


def test_on_step_sees_the_parameters_after_exactly_s_steps():
    module, params, coords, targets = tiny_problem()
    seen = {}
    adapt(
        module,
        broadcast(params, 3),
        coords,
        targets,
        3,
        0.05,
        on_step=lambda s, p: seen.__setitem__(s, {k: v.detach().clone() for k, v in p.items()}),
    )
    assert sorted(seen) == [1, 2, 3]
    for s in (1, 2, 3):
        direct = adapt(module, broadcast(params, 3), coords, targets, s, 0.05)
        for k, v in direct.items():
            torch.testing.assert_close(seen[s][k], v.detach())


def test_coordinates_span_minus_one_to_one_in_every_family():
    coords, _ = data.partition(8, 2)
    assert coords.min() == -1.0 and coords.max() == 1.0
    assert torch.equal(coords[0, 0], torch.tensor([-1.0, -1.0]))
    coords, _ = data.segments_1d(16, 4)
    assert coords.min() == -1.0 and coords.max() == 1.0 and coords[0, 0, 0] == -1.0
    coords, _ = data.segments_video(4, 8, 2)
    assert coords.min() == -1.0 and coords.max() == 1.0


def held_out_signals(cfg):
    return train.held_out(cfg)[3]  # (n, t, m, C) targets


def meta_training_signals(cfg):
    coords, index = train.layout(cfg)
    return [train.meta_batch(cfg, step, coords, index)[1] for step in range(cfg.meta_steps)]


def assert_disjoint(train_batches, test_targets):
    test_rows = test_targets.reshape(-1, *test_targets.shape[2:])
    for batch in train_batches:
        for row in batch:
            assert not any(torch.equal(row, t) for t in test_rows), "a held-out signal meta-trains"


@pytest.mark.parametrize("signal", ["image", "audio"])
def test_meta_training_never_sees_a_held_out_signal(signal, tiny):
    cfg = dataclasses.replace(tiny, signal=signal, meta_steps=4)
    assert_disjoint(meta_training_signals(cfg), held_out_signals(cfg))


def write_folder(folder, count=6, side=8):
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(count):
        pixels = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"{i:02d}.png")
    return folder


def test_image_folder_holds_out_different_images_per_seed_and_never_meta_trains_them(
    tiny, tmp_path
):
    folder = write_folder(tmp_path / "faces")
    cfg = dataclasses.replace(tiny, image_folder=str(folder), test_images=2, meta_steps=4)
    held = {}
    for seed in range(4):
        seeded = dataclasses.replace(cfg, seed=seed)
        test_idx, train_idx = data.held_out_split(6, 2, seed)
        assert sorted([*test_idx.tolist(), *train_idx.tolist()]) == list(range(6))
        held[seed] = tuple(test_idx.tolist())
        pool = data.load_image_folder(folder, 8)
        torch.testing.assert_close(train.signals(seeded, "test", 2), pool[test_idx])
        assert_disjoint(meta_training_signals(seeded), held_out_signals(seeded))
    assert len(set(held.values())) > 1  # not the last files by name for every seed
    assert held[0] == tuple(data.held_out_split(6, 2, 0)[0].tolist())  # fixed by the seed


def test_grey_and_small_images_are_named_on_stderr(tmp_path, capsys):
    folder = tmp_path / "mixed"
    folder.mkdir()
    Image.fromarray(np.full((25, 25), 128, np.uint8)).save(folder / "grey.png")
    Image.fromarray(np.zeros((40, 40, 3), np.uint8)).save(folder / "rgb.png")
    images = data.load_image_folder(folder, 32)
    assert images.shape == (2, 32, 32, 3)
    err = capsys.readouterr().err
    assert "converted to RGB: grey.png (L)" in err
    assert "upscaled to 32x32: grey.png (25x25)" in err and "rgb.png" not in err


def test_ol_at_step_s_is_t_times_s_offline_steps(tiny):
    cfg = dataclasses.replace(tiny, eval_steps=(1, 3))
    coords, index = data.partition(cfg.image_size, cfg.grid)
    images = train.signals(cfg, "test", cfg.n_test)
    targets = train.split_targets(images, index)
    module, init = init_params(cfg.single_hidden, cfg.omega0, 1)
    out = testtime.evaluate_single(cfg, "OL", module, init, coords, targets, images, index)
    all_x = coords.reshape(1, -1, 2).expand(cfg.n_test, -1, -1)
    all_y = targets.reshape(cfg.n_test, -1, 3)
    for s in (1, 3):
        fitted = baselines.fit_offline(module, init, coords, targets, s, cfg.inner_lr)
        mse = point_losses(module, fitted, all_x, all_y).mean(-1).detach()
        assert out[f"psnr_step{s}"] == pytest.approx(testtime.mean_psnr(mse), rel=1e-5)


def test_forgetting_is_sub_task_one_psnr_right_after_minus_at_the_end(tiny):
    cfg = dataclasses.replace(tiny, eval_steps=(1, 8))
    coords, index = data.partition(cfg.image_size, cfg.grid)
    images = train.signals(cfg, "test", cfg.n_test)
    targets = train.split_targets(images, index)
    module, init = init_params(cfg.single_hidden, cfg.omega0, 1)
    out = testtime.evaluate_single(cfg, "Naive", module, init, coords, targets, images, index)
    final, first = baselines.fit_single(module, init, coords, targets, 8, cfg.inner_lr, "naive")
    x0 = coords[0].expand(cfg.n_test, -1, -1)
    after = point_losses(module, final, x0, targets[:, 0]).mean(-1).detach()
    expected = testtime.mean_psnr(first) - testtime.mean_psnr(after)
    assert abs(expected) > 0.1  # later sub-tasks move sub-task 1's error (either way at 8 steps)
    assert out["forgetting_q1_db"] == pytest.approx(expected, rel=1e-5)


def test_methods_choose_what_train_fits_and_eval_reloads(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, methods=("MCL-NF", "ER"))
    metrics = train.train_and_evaluate(cfg, tmp_path / "run")
    assert {k.split("/")[0] for k in metrics} == {"MCL-NF", "ER"}
    assert sorted(p.name for p in (tmp_path / "run").glob("*.safetensors")) == [
        "mcl_nf_init.safetensors"
    ]
    assert json.loads((tmp_path / "run/config.json").read_text())["methods"] == ["MCL-NF", "ER"]
    again = train.evaluate(dataclasses.replace(tiny, methods=()), tmp_path / "run")
    assert again == pytest.approx(metrics)
    with pytest.raises(ValueError, match="'SGD' is not one of"):
        train.train_and_evaluate(dataclasses.replace(tiny, methods=("SGD",)), tmp_path / "bad")
