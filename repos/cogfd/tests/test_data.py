"""The renderer is deterministic, prompts are checked, the oracle is accurate."""

from __future__ import annotations

import pytest
import torch

from cogfd import data, text


def test_renderer_is_deterministic_in_the_seed():
    a = data.render_batch(["red circle", "blue", ""], 8, torch.Generator().manual_seed(3))
    b = data.render_batch(["red circle", "blue", ""], 8, torch.Generator().manual_seed(3))
    c = data.render_batch(["red circle", "blue", ""], 8, torch.Generator().manual_seed(4))
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])
    assert a[0].min() >= -1 and a[0].max() <= 1


def test_synonyms_and_subtypes_share_oracle_classes():
    for prompt in ("red circle", "crimson disk", "scarlet ring", "ruby circle"):
        assert data.expected_classes(prompt) == (0, 0)
    assert data.expected_classes("blue") == (2, None)


def test_clip_tokenizer_makes_each_word_one_token_and_rejects_unknown_words():
    encoder = text.tiny_text_encoder()
    tok = encoder.tokenizer(["", "red circle"], padding="max_length", max_length=4)
    assert tok.attention_mask == [[1, 1, 0, 0], [1, 1, 1, 1]]  # <|startoftext|> ... <|endoftext|>
    assert all(len(encoder.tokenizer.tokenize(w)) == 1 for w in data.VOCAB)
    hidden, _mask = encoder(["red circle", ""])
    assert hidden.shape == (2, 4, text.EMBED_DIM)
    with pytest.raises(ValueError, match="'purple' is not a known colour"):
        encoder(["purple circle"])
