"""A local transformers causal LM folder as the policy: a tiny random Llama with its own BPE
tokenizer that the test builds and saves, trained with full weights and with LoRA (peft).
Nothing is downloaded (HF_HUB_OFFLINE=1, set in conftest)."""

from __future__ import annotations

import dataclasses
import math

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from smartrag.cli import main
from smartrag.data import make_world, pretraining_text
from smartrag.policy import Codec
from smartrag.train import build, train_and_evaluate


def save_tiny_llama(folder, cfg) -> None:
    world = make_world(
        cfg.n_entities, cfg.n_values, cfg.n_distractors, cfg.head_frac, cfg.zipf_s, cfg.seed
    )
    tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    trainer = trainers.BpeTrainer(
        vocab_size=150, special_tokens=["<unk>"], end_of_word_suffix="</w>", show_progress=False
    )
    text = [*world.documents, *(q.text for q in world.questions), *pretraining_text(world, 2)]
    tok.train_from_iterator(text, trainer)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")
    hf.save_pretrained(folder)
    lm = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(hf),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=256,
            tie_word_embeddings=True,
        )
    )
    lm.save_pretrained(folder)


@pytest.fixture
def llama(tmp_path, tiny):
    save_tiny_llama(tmp_path / "llama", tiny)
    return str(tmp_path / "llama")


def test_codec_of_a_pretrained_tokenizer_keeps_action_tokens_whole(llama):
    codec = Codec.from_pretrained(llama)
    ids = codec.encode(["[SEARCH] where was born ? <eos>"])[0]
    assert ids[0] == codec.search and ids[-1] == codec.eos
    assert codec.words(ids) == ["[SEARCH]", "where", "was", "born", "?", "<eos>"]


@pytest.mark.parametrize("lora_r", [0, 4])
def test_pretrained_folder_trains_end_to_end(llama, tiny, tmp_path, lora_r):
    cfg = dataclasses.replace(tiny, policy_path=llama, lora_r=lora_r)
    _, _, policy = build(cfg)
    trainable = [n for n, p in policy.named_parameters() if p.requires_grad]
    if lora_r:
        assert trainable and all(
            "lora_" in n or "embed_tokens" in n or "value_head" in n for n in trainable
        )
        assert any("lora_" in n for n in trainable)
    else:
        assert len(trainable) == len(list(policy.parameters()))
    metrics = train_and_evaluate(cfg, tmp_path / f"run{lora_r}")
    assert math.isfinite(metrics["smartrag/em"]) and "oracle/em" in metrics
    again = train_and_evaluate(dataclasses.replace(cfg, resume=True), tmp_path / f"run{lora_r}")
    assert again["smartrag/em"] == metrics["smartrag/em"]  # the checkpoint round trip


def test_missing_policy_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["train", "--policy-path", str(tmp_path / "nope"), "--out", str(tmp_path)]) == 2
    assert "policy folder" in capsys.readouterr().err
