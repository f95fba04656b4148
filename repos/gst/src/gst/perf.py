"""Tokens per second of training and sampling: our decoder vs a stock transformers
LlamaForCausalLM of the same width, depth, heads, feed-forward size and vocabulary."""

from __future__ import annotations

import os
import time

import torch

from .model import GST


def llama_peer(model: GST, vocab_size: int, width: int, depth: int, heads: int):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=width,
        intermediate_size=model.blocks[0].mlp.gate.out_features,
        num_hidden_layers=depth,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=model.angles.shape[0],
        attention_dropout=0.0,
        pad_token_id=0,
        bos_token_id=None,
        eos_token_id=None,
    )
    return LlamaForCausalLM(cfg)


def _median_time(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def compare(
    model: GST,
    tokens: torch.Tensor,
    seg: torch.Tensor,
    n_new: int,
    width: int,
    depth: int,
    heads: int,
    repeats: int = 3,
) -> dict[str, float]:
    """Training step (forward, backward) and KV-cached sampling of the last `n_new` tokens,
    on identical token batches; returns tokens/s for both models and their parameter counts."""
    vocab = model.head.out_features
    peer = llama_peer(model, vocab, width, depth, heads)
    b, t = tokens.shape
    gen = torch.Generator().manual_seed(0)
    allowed = torch.ones(vocab, dtype=torch.bool)

    def ours_train():
        model.train()
        logits = model(tokens, seg)
        torch.nn.functional.cross_entropy(
            logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()
        ).backward()
        model.zero_grad(set_to_none=True)

    def peer_train():
        peer.train()
        peer(input_ids=tokens, labels=tokens).loss.backward()
        peer.zero_grad(set_to_none=True)

    prefix = t - n_new

    def ours_sample():
        model.eval()
        model.sample(tokens[:, :prefix], seg[:, :prefix], n_new, int(seg[0, -1]), allowed, gen)

    def peer_sample():
        peer.eval()
        with torch.no_grad():
            peer.generate(
                tokens[:, :prefix],
                attention_mask=torch.ones_like(tokens[:, :prefix]),
                max_new_tokens=n_new,
                min_new_tokens=n_new,
                do_sample=True,
                top_k=0,
            )

    out = {
        "ours_train_s": _median_time(ours_train, repeats),
        "peer_train_s": _median_time(peer_train, repeats),
        "ours_sample_s": _median_time(ours_sample, repeats),
        "peer_sample_s": _median_time(peer_sample, repeats),
    }
    out["ours_params"] = sum(p.numel() for p in model.parameters())
    out["peer_params"] = sum(p.numel() for p in peer.parameters())
    out["train_tokens"], out["sample_tokens"] = b * t, b * n_new
    return out
