"""The trivial floors of the benchmark table (issue 38, points 2 and 4): each is what it says,
and each fails or succeeds where it must."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from gst import ranking, sequence, train
from gst.floors import FLOORS, chance_pose, mean_image, nearest_pose, nearest_view
from gst.metrics import PSNR_CAP, image_metrics


@pytest.fixture
def prep(tiny):
    return train.prepare(tiny)


def _on_train(prep):
    """The training pairs used as the test set: nearest-neighbour floors must copy them."""
    return dataclasses.replace(
        prep, test=prep.train, codes={"train": prep.codes["train"], "test": prep.codes["train"]}
    )


def test_nearest_floors_copy_a_training_pair_exactly(prep):
    on_train = _on_train(prep)
    view = nearest_view(on_train)
    assert view["psnr"] == PSNR_CAP and view["ssim"] == pytest.approx(1.0)
    assert nearest_pose(on_train)["rot_acc15"] == 100.0


def test_mean_image_is_the_per_pixel_training_mean(prep):
    mean = prep.train.tgt.astype(np.float64).mean(0)
    ref = image_metrics(np.broadcast_to(mean, prep.test.tgt.shape), prep.test.tgt)
    assert mean_image(prep) == pytest.approx(ref, abs=1e-4)


def _shuffled_test_images(prep):
    perm = np.random.default_rng(0).permutation(len(prep.test.obs))
    test = dataclasses.replace(prep.test, obs=prep.test.obs[perm], tgt=prep.test.tgt[perm])
    return dataclasses.replace(prep, test=test)


def test_image_blind_floors_ignore_the_test_images(prep):
    """Chance (pose) does not look at the test images; shuffling them changes nothing, while the
    nearest-pair pose floor, which does look, changes."""
    shuffled = _shuffled_test_images(prep)
    assert chance_pose(shuffled) == chance_pose(prep)
    assert nearest_pose(shuffled) != nearest_pose(prep)


def test_every_floor_returns_finite_metrics(prep):
    for name, floor in FLOORS.items():
        out = floor(prep)
        assert out and all(np.isfinite(v) for v in out.values()), name


@torch.no_grad()
def test_ranking_scores_match_a_per_candidate_forward(tiny, prep):
    """The batched candidate scores equal the summed log-likelihood of the scored segments from
    one plain forward per candidate (GEN: camera + image; EST: camera)."""
    torch.manual_seed(0)
    model = train.build_model(tiny, prep.vocab).eval()
    torch.nn.init.normal_(model.head.weight, std=0.2)
    cand = ranking.candidates(prep, 5)
    c, n = prep.codes["test"], prep.codes["test"]["obs"].shape[1]
    for order in ("gen", "est"):
        fast = ranking.scores(model, prep, order, cand, chunk=7)
        for row in range(3):
            for j, k in enumerate(cand):
                cam = prep.codes["train"]["cam"][k : k + 1]
                tokens, seg = sequence.build(
                    prep.vocab, c["obs"][row : row + 1], cam, c["tgt"][row : row + 1], order
                )
                losses = sequence.segment_losses(model(tokens, seg), tokens, seg, n)
                ref = -n * sum(losses[s] for s in ranking.SCORED[order])
                assert float(fast[row, j]) == pytest.approx(float(ref), rel=1e-4, abs=1e-3)


def test_untrained_model_cannot_rank(tiny, prep):
    """Negative control: the zero-initialised head scores every candidate alike."""
    model = train.build_model(tiny, prep.vocab).eval()
    s = ranking.scores(model, prep, "gen", ranking.candidates(prep, 6))
    assert torch.allclose(s, s[:, :1].expand_as(s))


def test_tokenizers_are_fitted_on_training_pairs_only(tiny, prep):
    """No test image or camera reaches the codebooks: refitting on the training pairs alone
    gives the same centroids."""
    from gst.tokenizers import KMeansTokenizer

    patch = tiny.image_size // tiny.grid
    image = KMeansTokenizer(tiny.image_size, patch, 3, tiny.image_codes)
    image.fit(np.concatenate([prep.train.obs, prep.train.tgt]), tiny.seed)
    camera = KMeansTokenizer(tiny.image_size, patch, 6, tiny.camera_codes)
    camera.fit(prep.train.rays, tiny.seed)
    np.testing.assert_array_equal(prep.image_tok.centroids, image.centroids)
    np.testing.assert_array_equal(prep.camera_tok.centroids, camera.centroids)


def test_chance_pose_reads_no_test_camera(prep):
    """Chance is one camera from the training rotations: every test pair given the same
    rotation, 90 degrees away from that guess, scores 0 within 15 degrees (a guess read from the
    test cameras would score 100)."""
    u, _, vt = np.linalg.svd(prep.train.rotation.mean(0))
    guess = u @ np.diag([1.0, 1.0, np.linalg.det(u @ vt)]) @ vt
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    n = len(prep.test.rotation)
    far = np.broadcast_to(turn @ guess, (n, 3, 3)).copy()
    test = dataclasses.replace(prep.test, rotation=far, translation=np.zeros((n, 3)))
    assert chance_pose(dataclasses.replace(prep, test=test))["rot_acc15"] == 0.0


def test_ranking_picks_the_most_likely_candidate(tiny, prep, monkeypatch):
    """With scores that are highest for the candidate nearest the truth, the ranked camera is
    the oracle's (rank_ metrics equal rank_oracle_ metrics); the least likely one is not."""
    cand = ranking.candidates(prep, tiny.pose_candidates)
    ang = ranking.geodesic_deg(prep.train.rotation[cand][None], prep.test.rotation[:, None])
    monkeypatch.setattr(ranking, "scores", lambda *a, **k: torch.from_numpy(-ang))
    out = ranking.rank_pose_metrics(tiny, prep, None, "gen")
    for key in ("rot_acc15", "rot_err_median", "centre_err"):
        assert out["rank_" + key] == out["rank_oracle_" + key]
    monkeypatch.setattr(ranking, "scores", lambda *a, **k: torch.from_numpy(ang))
    worst = ranking.rank_pose_metrics(tiny, prep, None, "gen")
    assert worst["rank_rot_err_median"] > out["rank_rot_err_median"]
