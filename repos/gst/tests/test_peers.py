"""Our VQ layer and image metrics against the peer libraries (issue 38, point 6):
vector-quantize-pytorch's cosine-similarity VectorQuantize and torchmetrics' PSNR / SSIM."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torchmetrics.functional.image import (
    peak_signal_noise_ratio,
    structural_similarity_index_measure,
)
from vector_quantize_pytorch import VectorQuantize

from gst.data import make_pairs
from gst.metrics import psnr, ssim
from gst.tokenizers import UnitVQ


def test_unit_vq_matches_vector_quantize_pytorch():
    """Same codes, same quantised value, the same straight-through gradient (through the
    normalisation, with the peer's default rotation trick switched off) and the same commitment
    term (0.25 |z - sg(e)|^2). The peer learns its codebook by EMA; ours, like the
    official LlamaGen VQ, by the codebook loss |sg(z) - e|^2, so the losses differ by that term."""
    torch.manual_seed(0)
    ours = UnitVQ(n_codes=16, dim=4)
    peer = VectorQuantize(
        dim=4,
        codebook_size=16,
        use_cosine_sim=True,
        commitment_weight=0.25,
        kmeans_init=False,
        rotation_trick=False,
    )
    with torch.no_grad():
        peer._codebook.embed.copy_(F.normalize(ours.codebook, dim=-1)[None])
    z = torch.randn(3, 10, 4)
    w = torch.randn(3, 10, 4)
    z_ours, z_peer = z.clone().requires_grad_(True), z.clone().requires_grad_(True)
    q_ours, ids_ours, loss_ours = ours(z_ours)
    peer.train()
    q_peer, ids_peer, commit_peer = peer(z_peer)
    assert torch.equal(ids_ours, ids_peer)
    assert torch.allclose(q_ours, q_peer, atol=1e-6)
    # ours = codebook term + 0.25 commitment with equal distances: 1.25 x the distance
    assert float(commit_peer.detach()) == pytest.approx(
        0.25 * float(loss_ours.detach()) / 1.25, rel=1e-5
    )
    (q_ours * w).sum().backward()
    (q_peer * w).sum().backward()
    assert torch.allclose(z_ours.grad, z_peer.grad, atol=1e-6)


def _views():
    p = make_pairs(6, 24, 2, seed=0)
    noisy = np.clip(p.tgt + np.random.default_rng(0).normal(0, 0.1, p.tgt.shape), 0, 1)
    return p.obs, noisy.astype(np.float32), p.tgt


@pytest.mark.parametrize("which", [0, 1])
def test_psnr_and_ssim_match_torchmetrics(which):
    """PSNR equals torchmetrics'. SSIM equals torchmetrics' Gaussian SSIM map averaged over the
    interior: torchmetrics also averages the border, computed on reflect-padded images, which
    scikit-image (and we) crop (5 pixels: a large share of a 24x24 view)."""
    pred, true = _views()[which], _views()[2]
    tp = torch.from_numpy(pred).permute(0, 3, 1, 2).double()
    tt = torch.from_numpy(true).permute(0, 3, 1, 2).double()
    ref_psnr = [
        float(peak_signal_noise_ratio(a[None], b[None], data_range=1.0))
        for a, b in zip(tp, tt, strict=True)
    ]
    _, ssim_map = structural_similarity_index_measure(
        tp, tt, data_range=1.0, reduction="none", return_full_image=True
    )
    ref_ssim = ssim_map[..., 5:-5, 5:-5].mean((1, 2, 3)).numpy()
    assert np.allclose(psnr(pred, true), ref_psnr, atol=1e-4)
    assert np.allclose(ssim(pred, true), ref_ssim, atol=1e-4)


def test_psnr_closed_form():
    true = np.zeros((1, 4, 4, 3), np.float32)
    assert psnr(true + 0.1, true)[0] == pytest.approx(20.0, abs=1e-4)  # MSE 0.01
