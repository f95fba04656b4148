"""Data: deterministic in the seed, targets have the stated structure, the image-folder loader reads files."""

from __future__ import annotations

import numpy as np
import pytest
import tensorly as tl
import torch
from PIL import Image

from flora import data


def test_targets_have_the_stated_ranks_and_are_deterministic():
    shape = (12, 10, 3, 3)
    t = data.tucker_target(shape, (4, 3, 2, 3), seed=0)
    assert torch.equal(t, data.tucker_target(shape, (4, 3, 2, 3), seed=0))
    ranks = [
        int(torch.linalg.matrix_rank(torch.from_numpy(tl.unfold(t.numpy(), n)))) for n in range(4)
    ]
    assert ranks == [4, 3, 2, 3]
    m = data.matrix_rank_target(shape, 2, seed=1)
    assert int(torch.linalg.matrix_rank(m.reshape(12, -1))) == 2
    assert (
        int(torch.linalg.matrix_rank(torch.from_numpy(tl.unfold(m.numpy(), 1)))) == 10
    )  # in-mode full
    assert abs(float(t.square().mean()) - 1.0) < 1e-5


def test_digits_tasks_are_deterministic_disjoint_and_labelled():
    a, b = data.digits_tasks(3), data.digits_tasks(3)
    assert all(torch.equal(a[t][k], b[t][k]) for t in a for k in a[t])
    assert not torch.equal(a["pretrain"]["x_train"], data.digits_tasks(4)["pretrain"]["x_train"])
    for task in a.values():
        assert set(task["y_train"].tolist()) == set(range(5))
        assert float(task["x_train"].min()) == 0.0 and float(task["x_train"].max()) == 1.0
    big = data.digits_tasks(0, size=16, channels=3)
    assert big["shift"]["x_train"].shape[1:] == (3, 16, 16)


def test_image_folder_loader_reads_what_the_test_wrote(tmp_path):
    rng = np.random.default_rng(0)
    for cls in ("cat", "dog"):
        (tmp_path / cls).mkdir()
        for i in range(3):
            Image.fromarray(rng.integers(0, 255, (10, 12, 3), dtype=np.uint8)).save(
                tmp_path / cls / f"{i}.png"
            )
    x, y, classes = data.load_image_folder(tmp_path, 8)
    assert (
        classes == ["cat", "dog"] and x.shape == (6, 3, 8, 8) and y.tolist() == [0, 0, 0, 1, 1, 1]
    )
    assert 0.0 <= float(x.min()) and float(x.max()) <= 1.0
    with pytest.raises(ValueError, match="no class sub-folders"):
        data.load_image_folder(tmp_path / "cat", 8)


def test_unreadable_image_is_a_one_line_error_naming_the_file(tmp_path):
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        Image.fromarray(np.zeros((4, 4, 3), dtype=np.uint8)).save(tmp_path / cls / "0.png")
    (tmp_path / "b" / "broken.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match=r"image file .*broken.png cannot be read"):
        data.load_image_folder(tmp_path, 8)


def test_splits_are_disjoint_and_validation_is_carved_from_train():
    task = data.digits_tasks(0)["shift"]
    n = {s: len(task[f"y_{s}"]) for s in ("train", "val", "test")}
    assert n["val"] > 0 and abs(n["val"] - n["train"] / 3) <= 1
    rows = {s: {tuple(r.flatten().tolist()) for r in task[f"x_{s}"]} for s in n}
    assert not rows["val"] & rows["test"] and len(rows["train"] & rows["val"]) < n["val"] // 4
