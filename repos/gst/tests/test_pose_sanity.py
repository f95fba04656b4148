"""Pose learning is possible and measured against the right target: the CNN overfits a small
set, ground-truth camera tokens decode back to the camera, and the image-blind chance floor."""

from __future__ import annotations

import numpy as np
import torch

from gst import sequence
from gst.baselines import PoseCNN, pose_cnn_loss
from gst.data import make_pairs
from gst.floors import chance_pose
from gst.geometry import camera_centre, geodesic_deg, rays_to_camera
from gst.model import SEG_CAMERA
from gst.tokenizers import KMeansTokenizer, Vocab
from gst.train import prepare


def test_pose_cnn_overfits_a_small_training_set():
    """The CNN's loss, its rotation target and the geodesic metric agree: on 16 training pairs
    the regressed rotation reaches the labels (a frame mix-up would leave it near 90 degrees)."""
    p = make_pairs(16, 12, 2, seed=0)
    obs = torch.from_numpy(p.obs).permute(0, 3, 1, 2)
    tgt = torch.from_numpy(p.tgt).permute(0, 3, 1, 2)
    r = torch.from_numpy(p.rotation).float()
    c = torch.from_numpy(camera_centre(p.rotation, p.translation)).float()
    torch.manual_seed(0)
    model = PoseCNN(8)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(300):
        loss = pose_cnn_loss(model, obs, tgt, r, c)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        pred, _ = model(obs, tgt)
    angle = geodesic_deg(pred.double().numpy(), p.rotation)
    assert np.median(angle) < 30.0, np.median(angle)  # chance: about 95 degrees


def test_true_camera_tokens_decode_to_the_camera():
    """Encoding the true Pluecker map and decoding it recovers the relative rotation."""
    p = make_pairs(200, 12, 2, seed=1)
    tok = KMeansTokenizer(12, 6, 6, 64).fit(p.rays, seed=0)
    r, _ = rays_to_camera(tok.decode(tok.encode(p.rays)).astype(np.float64))
    assert np.median(geodesic_deg(r, p.rotation)) < 25.0  # chance: about 95 degrees


def test_chance_floor_is_image_blind_and_in_range(tiny):
    out = chance_pose(prepare(tiny))
    assert 0 <= out["rot_acc15"] <= out["rot_acc30"] <= 100
    assert out["rot_err_median"] > 0 and np.isfinite(out["centre_err"])


def test_est_sequence_camera_slot_holds_the_true_camera():
    """The camera segment of the EST order, read back like eval_ar reads sampled tokens,
    is the true camera's codes, and so decodes to the true rotation."""
    p = make_pairs(200, 12, 2, seed=1)
    tok = KMeansTokenizer(12, 6, 6, 64).fit(p.rays, seed=0)
    img = torch.zeros(200, 4, dtype=torch.long)
    cam = torch.from_numpy(tok.encode(p.rays))
    vocab = Vocab(16, 64)
    tokens, seg = sequence.build(vocab, img, cam, img, "est")
    slot = tokens[:, 2 * 4 + 1 :]
    assert (seg[:, 2 * 4 + 1 :] == SEG_CAMERA).all()
    ids = vocab.from_vocab(slot, "camera")
    assert torch.equal(ids, cam)
    r, _ = rays_to_camera(tok.decode(ids.numpy()).astype(np.float64))
    assert np.median(geodesic_deg(r, p.rotation)) < 25.0
