"""Data: determinism, bad signals, and the image-folder loader on files the test writes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from mcl_nf import data


def test_procedural_images_are_deterministic_and_in_range():
    a, b = data.procedural_images(3, 16, seed=5), data.procedural_images(3, 16, seed=5)
    assert torch.equal(a, b) and a.shape == (3, 16, 16, 3)
    assert 0 <= float(a.min()) and float(a.max()) <= 1
    assert not torch.equal(a, data.procedural_images(3, 16, seed=6))


@pytest.mark.parametrize(
    ("images", "message"),
    [
        (torch.zeros(2, 10, 10, 3), "does not split into grid=3"),
        (torch.zeros(2, 9, 9), "must have shape"),
        (torch.full((1, 9, 9, 3), float("nan")), "NaN"),
    ],
)
def test_bad_signals_are_clear_errors(images, message):
    with pytest.raises(ValueError, match=message):
        data.check_signals(images, grid=3)


def test_image_folder_loader_reads_what_the_test_wrote(tmp_path):
    rng = np.random.default_rng(0)
    pixels = []
    for i in range(3):
        arr = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
        Image.fromarray(arr).save(tmp_path / f"img{i}.png")
        pixels.append(arr)
    (tmp_path / "notes.txt").write_text("ignored")
    images = data.load_image_folder(tmp_path, 20)
    assert images.shape == (3, 20, 20, 3)
    np.testing.assert_allclose(images[0].numpy(), pixels[0][:, 5:25] / 255.0, atol=1e-6)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .png"):
        data.load_image_folder(tmp_path / "empty", 8)
