"""Audit of the joint objective and of evaluation: the joint model trains both orders with
equal weight, the output head is skipped only where no loss is taken, and evaluation samples
each task in its own order with its own slot mask."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from gst import sequence, train
from gst.model import GST, SEG_CAMERA, SEG_TARGET
from gst.tokenizers import Vocab

N = 9


def _batch(vocab: Vocab, order: str, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, vocab.n_image, (4, N), generator=g)
    cam = torch.randint(0, vocab.n_camera, (4, N), generator=g)
    tgt = torch.randint(0, vocab.n_image, (4, N), generator=g)
    return sequence.build(vocab, obs, cam, tgt, order)


def test_trained_segments_per_method():
    """Joint: both segments of both orders; single-task models: one segment of one order."""
    assert sequence.TRAINED["gst"] == {"gen": ("camera", "image"), "est": ("image", "camera")}
    assert sequence.TRAINED["gst_gen"] == {"gen": ("camera", "image")}
    assert sequence.TRAINED["nvs_only"] == {"gen": ("image",)}
    assert sequence.TRAINED["pose_only"] == {"est": ("camera",)}


@pytest.mark.parametrize(
    ("order", "trained"),
    [("gen", ("camera", "image")), ("gen", ("image",)), ("est", ("camera",))],
)
def test_head_skip_gives_the_same_losses(order, trained):
    """Logits from the first trained position on give exactly the full forward's losses."""
    vocab = Vocab(10, 6)
    torch.manual_seed(0)
    model = GST(vocab.size, 32, 2, 2, 3, dropout=0.0)
    torch.nn.init.normal_(model.head.weight, std=0.02)
    tokens, seg = _batch(vocab, order)
    full = sequence.segment_losses(model(tokens, seg), tokens, seg, N)
    first = sequence.first_trained_position(seg, trained)
    assert first == (N if len(trained) == 2 else 2 * N)
    part = sequence.segment_losses(model(tokens, seg, logits_from=first), tokens, seg, N, first)
    for k in trained:
        assert torch.allclose(full[k], part[k], atol=1e-6)


def test_joint_alternates_orders_with_equal_weight(tiny, monkeypatch):
    """Over an even number of steps the joint model sees GEN and EST equally often, and each
    step's loss is the plain mean of its two segment losses."""
    prep = train.prepare(tiny)
    model = train.build_model(tiny, prep.vocab)
    torch.nn.init.normal_(model.head.weight, std=0.02)
    seen = Counter()
    build = sequence.build

    def spy(vocab, obs, cam, tgt, order):
        seen[order] += 1
        return build(vocab, obs, cam, tgt, order)

    monkeypatch.setattr(sequence, "build", spy)
    idx = torch.arange(tiny.batch)
    for step in range(10):
        loss = train.ar_loss(model, prep, idx, "gst", step, "cpu")
        order = "gen" if step % 2 == 0 else "est"
        c = prep.codes["train"]
        tokens, seg = build(prep.vocab, c["obs"][idx], c["cam"][idx], c["tgt"][idx], order)
        ref = sequence.segment_losses(model(tokens, seg), tokens, seg, c["obs"].shape[1])
        assert torch.allclose(loss, (ref["camera"] + ref["image"]) / 2, atol=1e-6)
    assert seen == {"gen": 5, "est": 5}


def test_evaluation_samples_each_task_in_its_own_order_and_slot(tiny, monkeypatch):
    """Novel views: prefix [o][GEN][c], image slot mask, target-image segment. Pose: prefix
    [o][EST][i], camera slot mask, camera segment."""
    prep = train.prepare(tiny)
    vocab, n = prep.vocab, prep.codes["test"]["obs"].shape[1]
    model = train.build_model(tiny, prep.vocab).eval()
    calls = []
    real_sample = GST.sample

    def spy(self, prefix, prefix_seg, n_new, new_seg, allowed, *args):
        calls.append((prefix.clone(), n_new, new_seg, allowed.clone()))
        return real_sample(self, prefix, prefix_seg, n_new, new_seg, allowed, *args)

    monkeypatch.setattr(GST, "sample", spy)
    train.eval_ar(tiny, prep, model, "gst")
    assert len(calls) == 2
    c = prep.codes["test"]
    expected = {
        vocab.gen: (SEG_TARGET, "image", vocab.to_vocab(c["cam"], "camera")),
        vocab.est: (SEG_CAMERA, "camera", vocab.to_vocab(c["tgt"], "image")),
    }
    for prefix, n_new, new_seg, allowed in calls:
        special = int(prefix[0, n])
        seg_id, kind, middle = expected.pop(special)
        assert (prefix[:, n] == special).all() and prefix.shape[1] == 2 * n + 1
        assert torch.equal(prefix[:, :n], vocab.to_vocab(c["obs"], "image"))
        assert torch.equal(prefix[:, n + 1 :], middle)  # the known segment, never the answer
        assert n_new == n and new_seg == seg_id
        assert torch.equal(allowed, vocab.slot_mask(kind))
    assert not expected


def test_gen_only_joint_trains_both_segments_every_step(tiny):
    """gst_gen: every step is the GEN sequence with the mean of its camera and image losses;
    the alternating model gets twice the steps so each order gets cfg.steps (equal per task)."""
    prep = train.prepare(tiny)
    model = train.build_model(tiny, prep.vocab)
    torch.nn.init.normal_(model.head.weight, std=0.02)
    idx = torch.arange(tiny.batch)
    c = prep.codes["train"]
    tokens, seg = sequence.build(prep.vocab, c["obs"][idx], c["cam"][idx], c["tgt"][idx], "gen")
    ref = sequence.segment_losses(model(tokens, seg), tokens, seg, c["obs"].shape[1])
    for step in range(3):
        loss = train.ar_loss(model, prep, idx, "gst_gen", step, "cpu")
        assert torch.allclose(loss, (ref["camera"] + ref["image"]) / 2, atol=1e-6)
    steps = {m: train.steps_for(tiny, m) for m in ("gst", "gst_gen", "nvs_only", "pose_only")}
    assert steps == {"gst": 2 * tiny.steps, "gst_gen": tiny.steps} | {
        "nvs_only": tiny.steps,
        "pose_only": tiny.steps,
    }
