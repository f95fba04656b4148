"""A local transformers causal LM folder as the policy: a tiny random Llama with its own BPE
tokenizer that the test builds and saves, trained with full weights and with LoRA (peft).
Nothing is downloaded (HF_HUB_OFFLINE=1, set in conftest)."""

from __future__ import annotations

import dataclasses
import json
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


def test_cloze_label_decodes_multi_token_answers(llama, tiny, monkeypatch):
    """Under a BPE tokenizer answers span several tokens: the cloze label decodes until <eos>
    and compares after normalisation, so an LM that completes every fact correctly knows all."""
    from smartrag import warmup

    world, codec, _ = build(dataclasses.replace(tiny, policy_path=llama))
    qs = world.train[:8]
    ids = [codec.encode([f"the {q.answers[0]} ? <eos>"])[0] for q in qs]  # normalised away
    assert any(len(i) > 2 for i in ids)  # some answer is more than one token plus <eos>
    monkeypatch.setattr(warmup, "generate", lambda *a, **k: ids)
    assert warmup.cloze_correct(None, codec, world, qs, 6).all()
    wrong = [codec.encode([f"{q.answers[0]} {q.answers[0]} <eos>"])[0] for q in qs]
    monkeypatch.setattr(warmup, "generate", lambda *a, **k: wrong)
    assert not warmup.cloze_correct(None, codec, world, qs, 6).any()


def _popqa_files(folder, cfg):
    """A PopQA-format question file (possible_answers as a JSON string, s_pop, subj, prop) and
    a JSONL corpus, written from the synthetic world of cfg."""
    world = make_world(
        cfg.n_entities, cfg.n_values, cfg.n_distractors, cfg.head_frac, cfg.zipf_s, cfg.seed
    )
    rows = [
        {"question": q.text, "possible_answers": json.dumps(list(q.answers)),
         "s_pop": float(world.popularity[q.entity] * 1000), "subj": world.names[q.entity],
         "prop": q.rewrite.split()[-1]}
        for q in world.questions
    ]  # fmt: skip
    qf, cf = folder / "popqa.jsonl", folder / "corpus.jsonl"
    qf.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cf.write_text("\n".join(json.dumps({"text": d}) for d in world.documents) + "\n")
    return str(qf), str(cf), len(rows)


def test_train_and_eval_read_popqa_files_with_a_pretrained_lm(llama, tiny, tmp_path, capsys):
    qf, cf, n = _popqa_files(tmp_path, tiny)
    cfg = dataclasses.replace(tiny, policy_path=llama, questions=qf, corpus=cf, seeds=(0,))
    world, _, _ = build(cfg)
    assert world.source == qf and len(world.questions) == n and world.names == ()
    head_share = sum(q.head for q in world.questions) / n  # the top head_frac by s_pop
    assert abs(head_share - tiny.head_frac) < 0.1, head_share
    assert world.test[0].rewrite.split()[-1] in ("born", "works", "color")
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert math.isfinite(metrics["smartrag/em"]) and "sft_only_tuned/em" in metrics
    assert main(["eval", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["smartrag/em"] == metrics["smartrag/em"]


def test_questions_without_corpus_is_a_clear_error(tmp_path, capsys):
    qf = tmp_path / "q.jsonl"
    qf.write_text('{"question": "where ?", "answers": ["x"]}\n')
    assert main(["train", "--questions", str(qf), "--out", str(tmp_path / "r")]) == 2
    assert "--corpus" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "where ?", "answers": ["x"], "s_pop": "many"}\n')
    (tmp_path / "c.jsonl").write_text('{"text": "x"}\n')
    args = ["train", "--questions", str(bad), "--corpus", str(tmp_path / "c.jsonl")]
    assert main([*args, "--out", str(tmp_path / "r2")]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
