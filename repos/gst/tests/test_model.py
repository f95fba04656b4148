"""The decoder: 2-D rotary, causality, KV-cached masked sampling, and overfitting 8 sequences."""

from __future__ import annotations

import torch

from gst import sequence
from gst.model import GST, apply_rotary, rope_2d_angles, sequence_angles
from gst.tokenizers import Vocab

GRID, N = 3, 9


def tiny_model(vocab: Vocab, seed: int = 0) -> GST:
    torch.manual_seed(seed)
    model = GST(vocab.size, width=32, depth=2, heads=2, grid=GRID, dropout=0.0)
    torch.nn.init.normal_(model.head.weight, std=0.02)  # the zero init would hide causality
    return model.eval()


def batch(vocab: Vocab, b: int, seed: int, order: str = "gen"):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, vocab.n_image, (b, N), generator=g)
    cam = torch.randint(0, vocab.n_camera, (b, N), generator=g)
    tgt = torch.randint(0, vocab.n_image, (b, N), generator=g)
    return sequence.build(vocab, obs, cam, tgt, order)


def test_rotary_score_depends_only_on_relative_offset():
    angles = rope_2d_angles(6, 8)  # 6x6 grid, head_dim 8
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, generator=g), torch.randn(8, generator=g)

    def score(pq, pk):
        aq, ak = angles[pq[0] * 6 + pq[1]], angles[pk[0] * 6 + pk[1]]
        return apply_rotary(q, aq) @ apply_rotary(k, ak)

    assert torch.allclose(score((1, 2), (3, 1)), score((2, 4), (4, 3)), atol=1e-5)
    assert torch.allclose(score((0, 0), (0, 0)), q @ k, atol=1e-5)
    assert not torch.allclose(score((1, 2), (3, 1)), score((1, 2), (1, 3)), atol=1e-3)
    # rotation keeps the norm; the special token's entry is the identity
    assert torch.allclose(apply_rotary(q, angles[7]).norm(), q.norm())
    assert torch.equal(sequence_angles(6, 8)[36], torch.zeros(4))


def test_segments_repeat_the_same_rotary_table():
    ang = sequence_angles(GRID, 8)
    assert ang.shape == (3 * N + 1, 4)
    assert torch.equal(ang[:N], ang[N + 1 : 2 * N + 1]) and torch.equal(ang[:N], ang[2 * N + 1 :])


def test_causality_later_tokens_do_not_change_earlier_logits():
    vocab = Vocab(10, 6)
    model = tiny_model(vocab)
    tokens, seg = batch(vocab, 2, 0)
    changed = tokens.clone()
    changed[:, 20:] = vocab.to_vocab(torch.randint(0, 6, changed[:, 20:].shape), "camera")
    a, b = model(tokens, seg), model(changed, seg)
    assert torch.allclose(a[:, :20], b[:, :20], atol=1e-6)
    assert not torch.allclose(a[:, 20:], b[:, 20:], atol=1e-4)


def test_kv_cache_matches_full_forward():
    vocab = Vocab(10, 6)
    model = tiny_model(vocab)
    tokens, seg = batch(vocab, 2, 1)
    full = model(tokens, seg)
    caches = [[] for _ in model.blocks]
    first = model(tokens[:, :20], seg[:, :20], 0, caches)
    rest = [model(tokens[:, i : i + 1], seg[:, i : i + 1], i, caches) for i in range(20, 28)]
    assert torch.allclose(torch.cat([first] + rest, 1), full, atol=1e-5)


def test_kv_cache_with_a_multi_token_chunk_stays_causal():
    """A chunk of several new tokens after a cached prefix sees the whole past and, within the
    chunk, only earlier tokens (the offset causal mask)."""
    vocab = Vocab(10, 6)
    model = tiny_model(vocab)
    tokens, seg = batch(vocab, 2, 3)
    full = model(tokens, seg)
    caches = [[] for _ in model.blocks]
    first = model(tokens[:, :12], seg[:, :12], 0, caches)
    chunk = model(tokens[:, 12:20], seg[:, 12:20], 12, caches)
    assert torch.allclose(torch.cat([first, chunk], 1), full[:, :20], atol=1e-5)


def test_sampling_stays_inside_the_slot():
    vocab = Vocab(10, 6)
    model = tiny_model(vocab)
    tokens, seg = batch(vocab, 16, 2, "est")
    for kind, seg_id in (("camera", 2), ("image", 3)):
        new = model.sample(
            tokens[:, : N + 1],
            seg[:, : N + 1],
            N,
            seg_id,
            vocab.slot_mask(kind),
            torch.Generator().manual_seed(0),
            1.0,
            0,
        )
        lo, hi = vocab.slot_range(kind)
        assert new.min() >= lo and new.max() < hi


def test_overfits_8_sequences():
    vocab = Vocab(12, 8)
    torch.manual_seed(0)
    model = GST(vocab.size, width=32, depth=2, heads=2, grid=GRID, dropout=0.0)
    tokens, seg = batch(vocab, 8, 3)
    targets = tokens[:, N + 1 :]  # the camera and image tokens, predicted from positions N..
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(300):
        logits = model(tokens, seg)
        losses = sequence.segment_losses(logits, tokens, seg, N)
        if (logits[:, N:-1].argmax(-1) == targets).all():
            break
        opt.zero_grad()
        (losses["camera"] + losses["image"]).backward()
        opt.step()
    assert (model(tokens, seg)[:, N:-1].argmax(-1) == targets).all()
