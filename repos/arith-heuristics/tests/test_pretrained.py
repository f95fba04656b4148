"""A pretrained LM folder (config, weights, tokenizer) analysed through its own tokenizer: a
tiny random Llama whose tokenizer puts our symbols at shuffled ids."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from arith_heuristics.config import OPERATORS
from arith_heuristics.data import Vocab
from arith_heuristics.model import VocabView, load_checkpoint, locate


def _llama_folder(path, n_numbers: int, split_number: int | None = None):
    """Save a random 2-layer Llama and a word-level tokenizer; `split_number` is left out of
    the tokenizer's vocabulary (an unknown token)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = [str(n) for n in range(n_numbers) if n != split_number] + [str(d) for d in range(10)]
    words = list(dict.fromkeys(words + list(OPERATORS) + ["=", "filler", "text"]))
    order = np.random.default_rng(0).permutation(len(words))
    table = {"<unk>": 0, "<s>": 1} | {w: 2 + int(i) for w, i in zip(words, order, strict=True)}
    tok = Tokenizer(models.WordLevel(table, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", unk_token="<unk>")
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(table),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=16,
        bos_token_id=1,
        eos_token_id=1,
    )
    LlamaForCausalLM(cfg).save_pretrained(path)
    fast.save_pretrained(path)
    return table


def test_vocab_view_maps_prompts_and_logits_through_the_tokenizer(tmp_path):
    table = _llama_folder(tmp_path / "llama", 20)
    vocab = Vocab(20)
    model = load_checkpoint(tmp_path / "llama", vocab=vocab)
    assert isinstance(model, VocabView)
    parts = locate(model)
    assert parts.n_layer == 2 and parts.d_mlp == 32 and parts.n_head == 2
    ours = torch.tensor([[vocab.bos, 12, vocab.op("+"), 3, vocab.eq]])
    theirs = torch.tensor([[table["<s>"], table["12"], table["+"], table["3"], table["="]]])
    with torch.no_grad():
        direct = model.lm(input_ids=theirs).logits[0, -1]
        viewed = model(input_ids=ours).logits[0, -1]
    assert viewed.shape == (vocab.size,)
    assert torch.allclose(viewed[7], direct[table["7"]]) and torch.allclose(
        viewed[vocab.eq], direct[table["="]]
    )
    assert model.get_output_embeddings().weight.shape[0] == vocab.size


def test_a_number_without_its_own_token_is_a_clear_error(tmp_path):
    _llama_folder(tmp_path / "llama", 20, split_number=15)
    with pytest.raises(ValueError, match="no single token for '15'"):
        load_checkpoint(tmp_path / "llama", vocab=Vocab(20))


def test_train_and_evaluate_analyses_a_pretrained_llama(tiny, tmp_path):
    """The paper's protocol end to end on a pretrained-LM folder (full preset's --checkpoint path)."""
    from arith_heuristics.train import train_and_evaluate

    _llama_folder(tmp_path / "llama", tiny.n_numbers)
    cfg = dataclasses.replace(tiny, checkpoint=str(tmp_path / "llama"))
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert math.isfinite(metrics["train_acc"]) and "overlap_ckpt_0" not in metrics
    assert all(math.isfinite(metrics[f"faith_curve_0_{op}"]) for op in OPERATORS)
