"""Log-probability gathering and step masks against naive loops."""

from __future__ import annotations

import torch

from tpo.data import Tokenizer
from tpo.policy import build_policy, encode_pairs, forward
from tpo.tree_loss import step_sums

TOK = Tokenizer(10)
PROMPTS = ["x 7 + 3 ?", "x 1 * 2 - 3 ?"]
RESPONSES = ["S 7 + 3 = 0 A 0", "S 1 * 2 = 2 S 2 - 3 = 9 A 9"]


def test_token_logps_match_a_naive_loop():
    torch.manual_seed(0)
    model = build_policy(len(TOK.itos), 1, 16, 2).eval()
    batch = encode_pairs(TOK, PROMPTS, RESPONSES)
    logps, _ = forward(model, batch)
    with torch.no_grad():
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    for b in range(2):
        for t in range(1, batch.input_ids.shape[1]):
            expected = 0.0
            if batch.response_mask[b, t]:
                expected = torch.log_softmax(logits[b, t - 1], -1)[batch.input_ids[b, t]].item()
            assert abs(logps[b, t - 1].item() - expected) < 1e-5


def test_step_masks_exclude_prompt_and_padding():
    batch = encode_pairs(TOK, PROMPTS, RESPONSES)
    prompt_len = len(TOK.encode(PROMPTS[0])) + 1
    assert batch.response_mask[0, :prompt_len].sum() == 0
    assert (batch.step_ids[0, :prompt_len] == -1).all()
    real = int(batch.attention_mask[0].sum())
    assert real < batch.input_ids.shape[1]  # row 0 is padded
    assert batch.response_mask[0, real:].sum() == 0 and (batch.step_ids[0, real:] == -1).all()
    # row 1: two steps; the answer and <eos> belong to the last one
    assert batch.step_ids[1].max() == 1
    ones = torch.ones_like(batch.input_ids, dtype=torch.float)
    counts = step_sums(ones, batch.step_ids, 2)
    assert counts.tolist() == [[len(RESPONSES[0].split()) + 1, 0.0], [6.0, 6.0 + 2 + 1]]


def test_cached_generation_matches_a_naive_loop():
    """generate() keeps a key/value cache over left-padded rows; a row alone, recomputed from
    scratch each token, must give the same greedy tokens."""
    from tpo.policy import generate

    torch.manual_seed(1)
    model = build_policy(len(TOK.itos), 2, 16, 2).eval()
    contexts = [[TOK.bos] + TOK.encode(p) for p in PROMPTS + ["x 4 ?", "x 1 + 2 - 3 * 4 + 0 ?"]]
    got = generate(model, TOK, contexts, 12, temperature=0.0)
    for ctx, row in zip(contexts, got, strict=True):
        ids, expected = list(ctx), []
        for _ in range(12):
            with torch.no_grad():
                nxt = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
            expected.append(nxt)
            ids.append(nxt)
            if nxt == TOK.eos:
                break
        assert row == expected
