"""Vector quantisation, k-means patch codes and the shared vocabulary with slot masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gst.tokenizers import KMeansTokenizer, UnitVQ, Vocab, patchify, unpatchify


def test_unit_vq_nearest_by_cosine_and_straight_through():
    vq = UnitVQ(n_codes=5, dim=4)
    z = torch.randn(7, 4, requires_grad=True)
    zq, ids, loss = vq(z)
    codes = F.normalize(vq.codebook, dim=-1)
    cos = F.normalize(z, dim=-1) @ codes.T
    assert torch.equal(ids, cos.argmax(-1))
    assert torch.allclose(zq, codes[ids], atol=1e-6)  # forward value is the codeword
    w = torch.randn(7, 4)
    (zq * w).sum().backward()
    zn = F.normalize(z.detach(), dim=-1)
    # straight through: d(zq)/dz equals d(normalize(z))/dz
    expected = torch.autograd.functional.vjp(lambda x: F.normalize(x, dim=-1), z.detach(), w)[1]
    assert torch.allclose(z.grad, expected, atol=1e-6)
    assert loss.item() == pytest.approx(
        1.25 * F.mse_loss(codes[ids], zn).item(), rel=1e-5
    )  # codebook term + 0.25 commitment on the same distance


def test_patchify_round_trip():
    x = np.random.default_rng(0).random((2, 8, 8, 3))
    p = patchify(x, 4)
    assert p.shape == (2, 4, 48)
    assert np.array_equal(p[0, 1], x[0, :4, 4:8].reshape(-1))
    assert np.array_equal(unpatchify(p, 4, 3), x)


def test_kmeans_tokenizer_recovers_exact_codebook():
    rng = np.random.default_rng(0)
    centres = rng.random((4, 2 * 2 * 3)).astype(np.float32)
    ids = rng.integers(0, 4, (200, 4))
    maps = unpatchify(centres[ids], 2, 3)
    tok = KMeansTokenizer(4, 2, 3, 4).fit(maps, seed=0)
    back = tok.decode(tok.encode(maps))
    assert np.allclose(back, maps, atol=1e-5)


def test_tokenizer_rejects_wrong_image_size():
    tok = KMeansTokenizer(8, 4, 3, 4)
    with pytest.raises(ValueError, match=r"shape \(N, \(8, 8, 3\)\)"):
        tok.fit(np.zeros((2, 12, 12, 3)), seed=0)
    with pytest.raises(ValueError, match="must divide"):
        KMeansTokenizer(10, 4, 3, 4)


def test_vocab_offsets_and_masks():
    v = Vocab(n_image=16384, n_camera=2048)
    assert (v.camera_offset, v.gen, v.est, v.size) == (16384, 18432, 18433, 18434)
    assert v.to_vocab(torch.tensor([0, 2047]), "camera").tolist() == [16384, 18431]
    assert v.slot_mask("image").sum() == 16384 and not v.slot_mask("image")[16384]
    assert v.slot_mask("camera")[16384:18432].all() and v.slot_mask("camera").sum() == 2048


def test_token_outside_its_slot_is_a_clear_error():
    v = Vocab(8, 4)
    with pytest.raises(ValueError, match="token id 3 is outside its camera slot"):
        v.from_vocab(torch.tensor([9, 3]), "camera")
    with pytest.raises(ValueError, match="image code outside"):
        v.to_vocab(torch.tensor([8]), "image")


def test_vq_tokenizer_rejects_wrong_image_size():
    from gst.tokenizers import VQTokenizer

    tok = VQTokenizer(16, 4, 3, 8, steps=1)
    with pytest.raises(ValueError, match=r"shape \(N, \(16, 16, 3\)\)"):
        tok.fit(np.zeros((2, 24, 24, 3), dtype=np.float32), seed=0)
    with pytest.raises(ValueError, match="power of 2"):
        VQTokenizer(24, 5, 3, 8)
