"""Text conditioning through the same classes Stable Diffusion uses: transformers'
`CLIPTokenizer` and `CLIPTextModel`.

For the procedural world both are built offline: the tokenizer from a vocabulary file and a
merges file written from `data.VOCAB` (every word is one BPE token), the encoder from a small
`CLIPTextConfig` (1 layer, width 32). For SD v1.4/1.5 the same `TextEncoder` wraps the
pipeline folder's `tokenizer/` and `text_encoder/` (`from_pipeline_folder`).
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

from . import data

EMBED_DIM = 32
"""Hidden size of the tiny CLIP text encoder (= cross_attention_dim of the tiny UNet)."""
MAX_TOKENS = 4
"""<|startoftext|> + colour + shape + <|endoftext|>; shorter prompts are padded."""
BOS, EOS, PAD = "<|startoftext|>", "<|endoftext|>", "<pad>"


class TextEncoder(nn.Module):
    """Prompts -> (hidden states (B, L, D), attention mask (B, L)) via CLIPTokenizer and
    CLIPTextModel; `check` validates each prompt first (the toy world rejects unknown words)."""

    def __init__(
        self,
        model: CLIPTextModel,
        tokenizer: CLIPTokenizer,
        max_length: int,
        check: Callable[[str], object] | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.check = check

    def forward(self, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        for prompt in prompts:
            if self.check is not None:
                self.check(prompt)
        tok = self.tokenizer(
            prompts,
            padding="max_length",
            max_length=self.max_length,
            truncation=True,
            return_tensors="pt",
        )
        device = self.model.device
        ids, mask = tok.input_ids.to(device), tok.attention_mask.to(device)
        return self.model(input_ids=ids, attention_mask=mask).last_hidden_state, mask


def _bpe(parts: list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """CLIP's BPE on one word: merge the lowest-ranked adjacent pair until none is known."""
    while len(parts) > 1:
        pairs = [p for p in itertools.pairwise(parts) if p in ranks]
        if not pairs:
            break
        a, b = min(pairs, key=ranks.__getitem__)
        merged, i = [], 0
        while i < len(parts):
            if i + 1 < len(parts) and (parts[i], parts[i + 1]) == (a, b):
                merged.append(a + b)
                i += 2
            else:
                merged.append(parts[i])
                i += 1
        parts = merged
    return parts


def _merges_for(words: list[str]) -> list[tuple[str, str]]:
    """Merges that make every word one token. Each new merge goes last, so it never changes
    how an earlier word is merged (BPE always applies the lowest-ranked pair first)."""
    ranks: dict[tuple[str, str], int] = {}
    for word in words:
        parts = _bpe(list(word[:-1]) + [word[-1] + "</w>"], ranks)
        while len(parts) > 1:
            ranks[(parts[0], parts[1])] = len(ranks)
            parts = _bpe(parts, ranks)
    return list(ranks)


def tiny_tokenizer() -> CLIPTokenizer:
    """A CLIPTokenizer over the world's words, written to a temporary folder and loaded back."""
    words = list(data.VOCAB)
    merges = _merges_for(words)
    chars = sorted({c for w in words for c in w})
    tokens = [PAD, BOS, EOS] + chars + [c + "</w>" for c in chars]
    tokens += ["".join(m) for m in merges]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
    with tempfile.TemporaryDirectory() as folder:
        vocab_file, merges_file = Path(folder) / "vocab.json", Path(folder) / "merges.txt"
        vocab_file.write_text(json.dumps(vocab))
        merges_file.write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
        tokenizer = CLIPTokenizer(
            str(vocab_file),
            str(merges_file),
            unk_token=EOS,
            bos_token=BOS,
            eos_token=EOS,
            pad_token=PAD,
            model_max_length=MAX_TOKENS,
        )
    for word in words:
        if len(tokenizer.tokenize(word)) != 1:
            raise RuntimeError(f"the tiny tokenizer splits {word!r}: {tokenizer.tokenize(word)}")
    return tokenizer


def tiny_text_encoder(dim: int = EMBED_DIM) -> TextEncoder:
    """CLIPTextModel from a small CLIPTextConfig plus the tiny tokenizer (random weights)."""
    tokenizer = tiny_tokenizer()
    config = CLIPTextConfig(
        vocab_size=len(tokenizer),
        hidden_size=dim,
        intermediate_size=2 * dim,
        projection_dim=dim,
        num_hidden_layers=1,
        num_attention_heads=4,
        max_position_embeddings=MAX_TOKENS,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return TextEncoder(CLIPTextModel(config), tokenizer, MAX_TOKENS, check=data.parse_prompt)


def from_pipeline_folder(folder: str | Path) -> TextEncoder:
    """SD's tokenizer/ and text_encoder/ from a local diffusers pipeline folder (no hub)."""
    folder = Path(folder)
    tokenizer = CLIPTokenizer.from_pretrained(folder / "tokenizer", local_files_only=True)
    model = CLIPTextModel.from_pretrained(folder / "text_encoder", local_files_only=True)
    return TextEncoder(model.eval().requires_grad_(False), tokenizer, tokenizer.model_max_length)
