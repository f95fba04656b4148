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


def test_chirps_are_deterministic_in_range_and_seed_dependent():
    a, b = data.procedural_chirps(3, 64, seed=2), data.procedural_chirps(3, 64, seed=2)
    assert torch.equal(a, b) and a.shape == (3, 64, 1)
    assert 0 <= float(a.min()) and float(a.max()) <= 1 and float(a.std()) > 0.01
    assert not torch.equal(a, data.procedural_chirps(3, 64, seed=3))


def test_audio_segments_route_every_sample_to_exactly_one_module():
    coords, index = data.segments_1d(12, 4)
    assert coords.shape == (4, 3, 1)
    assert torch.equal(index.flatten().sort().values, torch.arange(12))
    assert bool((coords[1:, 0, 0] > coords[:-1, -1, 0]).all())  # consecutive, non-overlapping
    with pytest.raises(ValueError, match="does not split into segments=5"):
        data.segments_1d(12, 5)


@pytest.mark.parametrize(
    ("clips", "message"),
    [
        (torch.zeros(2, 10, 1), "does not split into segments=4"),
        (torch.zeros(2, 12), "must have shape"),
        (torch.full((1, 12, 1), float("nan")), "NaN"),
    ],
)
def test_bad_audio_is_a_clear_error(clips, message):
    with pytest.raises(ValueError, match=message):
        data.check_audio(clips, segments=4)


def test_videos_are_deterministic_in_range_and_move():
    a = data.procedural_videos(2, 4, 8, seed=1)
    assert torch.equal(a, data.procedural_videos(2, 4, 8, seed=1)) and a.shape == (2, 4, 8, 8, 3)
    assert 0 <= float(a.min()) and float(a.max()) <= 1
    assert not torch.equal(a[:, 0], a[:, -1])  # the blobs move between frames


def test_video_segments_route_every_pixel_to_exactly_one_module():
    coords, index = data.segments_video(frames=6, size=4, segments=3)
    assert coords.shape == (3, 32, 3)
    assert torch.equal(index.flatten().sort().values, torch.arange(96))
    assert bool((coords[1:, :, 0].min(1).values > coords[:-1, :, 0].max(1).values).all())


@pytest.mark.parametrize(
    ("videos", "message"),
    [
        (torch.zeros(1, 6, 4, 4, 3), "do not split into segments=4"),
        (torch.zeros(1, 4, 4, 5, 3), "must have shape"),
        (torch.full((1, 4, 4, 4, 3), float("nan")), "NaN"),
    ],
)
def test_bad_video_is_a_clear_error(videos, message):
    with pytest.raises(ValueError, match=message):
        data.check_video(videos, segments=4)


def test_corrupt_or_missing_image_files_are_one_line_errors_naming_them(tmp_path):
    Image.fromarray(np.zeros((8, 8, 3), dtype=np.uint8)).save(tmp_path / "good.png")
    (tmp_path / "broken.jpg").write_bytes(b"not a jpeg at all")
    with pytest.raises(ValueError, match=r"cannot read image .*broken\.jpg"):
        data.load_image_folder(tmp_path, 8)
    with pytest.raises(ValueError, match="does not exist.*mcl-nf photos"):
        data.load_image_folder(tmp_path / "nowhere", 8)


def test_scikit_image_photographs_are_written_and_loadable(tmp_path):
    paths = data.write_skimage_photos(tmp_path)
    assert [p.stem for p in paths] == list(data.SKIMAGE_PHOTOS)
    images = data.load_image_folder(tmp_path, 24)
    assert images.shape == (len(paths), 24, 24, 3)
    assert float(images.std()) > 0.05  # photographs, not blank files


def test_random_crops_are_deterministic_and_inside_the_images():
    images = torch.arange(2 * 10 * 10 * 3, dtype=torch.float32).reshape(2, 10, 10, 3)
    a = data.random_crops(images, 5, 4, seed=3)
    assert a.shape == (5, 4, 4, 3) and torch.equal(a, data.random_crops(images, 5, 4, seed=3))
    for crop in a:  # each crop is a contiguous window of one image
        hits = [
            (w, t, s)
            for w in range(2)
            for t in range(7)
            for s in range(7)
            if torch.equal(images[w, t : t + 4, s : s + 4], crop)
        ]
        assert len(hits) == 1
