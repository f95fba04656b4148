"""The paper's setting: a local transformers causal LM (a tiny random Llama built here) trained
with LoRA through peft on preference trees from JSONL."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from tpo.cli import main
from tpo.config import PRESETS
from tpo.data import Tree, save_trees
from tpo.evaluation import implicit_rewards
from tpo.hf import prepare_hf
from tpo.train import evaluate, train_and_evaluate

WORDS = [
    "What",
    "is",
    "plus",
    "?",
    "Step",
    "1:",
    "2",
    "3",
    "5",
    "6",
    "=",
    ".",
    "Step",
    "2:",
    "so",
    "the",
    "answer",
]
PROMPT = "What is 2 plus 3 ?"
GOOD = "Step 1: 2 plus 3 = 5 . Step 2: so the answer is 5"
WRONG = ["Step 1: 2 plus 3 = 6 . Step 2: so the answer is 6", "Step 1: 2 plus 3 = 5 . Step 2: 6"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-llama")
    vocab = {w: i for i, w in enumerate(["<pad>", "<s>", "</s>", "<unk>", *dict.fromkeys(WORDS)])}
    raw = Tokenizer(WordLevel(vocab=vocab, unk_token="<unk>"))
    raw.pre_tokenizer = WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
    )
    tok.save_pretrained(path)
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    LlamaForCausalLM(cfg).save_pretrained(path)
    return path


@pytest.fixture
def trees_file(tmp_path):
    trees = [Tree(PROMPT, [GOOD, *WRONG], [100.0, -100.0, -40.0]) for _ in range(6)]
    save_trees(tmp_path / "trees.jsonl", trees)
    return tmp_path / "trees.jsonl"


def _cfg(model_dir, trees_file, tmp_path, method="tpo"):
    return dataclasses.replace(
        PRESETS["quick"],
        model_dir=str(model_dir),
        trees=str(trees_file),
        method=method,
        out=str(tmp_path / "run"),
        pref_steps=2,
        pref_batch=2,
        pref_lr=1e-2,
        quiet=True,
    )


def test_steps_split_at_the_marker_and_reference_is_the_model_without_adapters(
    model_dir, trees_file, tmp_path
):
    stage = prepare_hf(_cfg(model_dir, trees_file, tmp_path))
    ids, steps = stage.tok.encode_response(GOOD)
    assert steps == [0] * 8 + [1] * 7 + [1] and ids[-1] == stage.tok.eos
    assert len(stage.train_trees) == 5 and len(stage.heldout_trees) == 1  # 85/15
    # LoRA starts at B = 0, so before training the policy equals the reference exactly
    for r in implicit_rewards(stage.sft, stage.tok, stage.heldout_trees, stage.heldout_ref, 0.5):
        assert float(abs(r).max()) < 1e-6


@pytest.mark.parametrize("method", ["tpo", "dpo", "tpo_code"])
def test_lora_training_on_jsonl_trees_writes_adapters_and_finite_metrics(
    method, model_dir, trees_file, tmp_path
):
    metrics = train_and_evaluate(_cfg(model_dir, trees_file, tmp_path, method), tmp_path / "run")
    assert set(metrics) == {"ndcg", "kendall_tau", "sibling_margin"}
    assert all(math.isfinite(v) for v in metrics.values())
    adapter = json.loads((tmp_path / "run" / "lora" / "adapter_config.json").read_text())
    assert adapter["r"] == 8 and adapter["lora_alpha"] == 16
    # eval: the base model with the saved adapters loaded measures the same again
    assert evaluate(_cfg(model_dir, trees_file, tmp_path, "sft"), tmp_path / "run") == metrics


def test_cli_model_dir_errors_name_the_folder_or_file(model_dir, tmp_path, capsys):
    assert main(["train", "--model-dir", str(tmp_path / "nope"), "--trees", "t.jsonl"]) == 2
    assert "nope" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"prompt": PROMPT, "responses": [GOOD, "no steps"], "scores": [1, 0]})
    )
    argv = ["train", "--model-dir", str(model_dir), "--trees", str(bad), "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert main(["bench", "--model-dir", str(model_dir), "--trees", str(bad)]) == 2
    assert "train --model-dir" in capsys.readouterr().err
    assert main([*argv, "--step-pattern", "Step ("]) == 2
    assert "not a regular expression" in capsys.readouterr().err
