"""Token sequences of the joint distribution p(c, i | o) = p(c | o) p(i | o, c).

GEN order  [o][<GEN>][c][i]: view prediction (camera then image).
EST order  [o][<EST>][i][c]: localisation when the target image is known.
The first n+1 tokens are the prefix; next-token cross-entropy is taken on the generated
segments that a method trains (joint: both segments of both orders).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .model import SEG_CAMERA, SEG_OBS, SEG_SPECIAL, SEG_TARGET
from .tokenizers import Vocab

ORDERS = ("gen", "est")
SEGMENT_KIND = {"camera": SEG_CAMERA, "image": SEG_TARGET}


def build(vocab: Vocab, obs: torch.Tensor, cam: torch.Tensor, tgt: torch.Tensor, order: str):
    """Codes (B, n) of each segment -> (tokens (B, 3n+1), segment types (B, 3n+1))."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    b, n = obs.shape
    o = vocab.to_vocab(obs, "image")
    c = vocab.to_vocab(cam, "camera")
    i = vocab.to_vocab(tgt, "image")
    special = torch.full((b, 1), vocab.gen if order == "gen" else vocab.est, dtype=torch.long)
    first, second = (c, i) if order == "gen" else (i, c)
    tokens = torch.cat([o, special, first, second], dim=1)
    kinds = (SEG_CAMERA, SEG_TARGET) if order == "gen" else (SEG_TARGET, SEG_CAMERA)
    seg = torch.tensor([SEG_OBS] * n + [SEG_SPECIAL] + [kinds[0]] * n + [kinds[1]] * n)
    return tokens, seg.expand(b, -1)


def segment_losses(
    logits: torch.Tensor, tokens: torch.Tensor, seg: torch.Tensor, n: int, logits_from: int = 0
) -> dict[str, torch.Tensor]:
    """Mean next-token cross-entropy over the camera and the target-image segments.

    logits (B, T - logits_from, V) are those of positions logits_from.. and predict
    tokens[:, logits_from + 1:]; returns {"camera": ..., "image": ...} for every segment that
    has a predicted token in that range.
    """
    ce = F.cross_entropy(
        logits[:, :-1].transpose(1, 2), tokens[:, logits_from + 1 :], reduction="none"
    )
    tgt_seg = seg[:, logits_from + 1 :]
    out = {}
    for name, kind in (("camera", SEG_CAMERA), ("image", SEG_TARGET)):
        sel = tgt_seg == kind
        if sel.any():
            out[name] = ce[sel].mean()
    return out


def first_trained_position(seg: torch.Tensor, trained: tuple[str, ...]) -> int:
    """The first position whose logits predict a token of a trained segment (segment types
    are the same for every row): the head and the loss need not run before it."""
    hit = torch.isin(seg[0, 1:], torch.tensor([SEGMENT_KIND[k] for k in trained]))
    return int(hit.nonzero()[0, 0])


# which (order, segment) losses each autoregressive method trains on: gst alternates the two
# orders step by step; gst_gen is the single-sequence joint model, p(c | o) p(i | o, c) in the
# GEN order only (the official sampler's only order)
TRAINED = {
    "gst": {"gen": ("camera", "image"), "est": ("image", "camera")},
    "gst_gen": {"gen": ("camera", "image")},
    "nvs_only": {"gen": ("image",)},
    "pose_only": {"est": ("camera",)},
}
