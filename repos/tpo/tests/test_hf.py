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
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert main(["bench", "--preset", "full"]) == 2
    assert "--model-dir" in capsys.readouterr().err
    assert main([*argv, "--step-pattern", "Step ("]) == 2
    assert "not a regular expression" in capsys.readouterr().err


def official_rows(n: int = 6) -> list[dict]:
    """Trees in the official data format (dataset.py): steps as a list, gold first."""
    good = ["Step 1: 2 plus 3 = 5 . ", "Step 2: so the answer is 5"]
    late = ["Step 1: 2 plus 3 = 5 . ", "Step 2: 6"]
    early = ["Step 1: 2 plus 3 = 6 . ", "Step 2: so the answer is 6"]
    one = ["Step 1: 2 plus 3 = 6"]  # fewer steps: the official merge acts on this list
    scored = [(good, 100), (late, 20), (early, -40), (one, -90)]
    row = {"prompt": PROMPT, "response_list": [{"response": r, "score": v} for r, v in scored]}
    return [row] * n


@pytest.fixture
def official_file(tmp_path):
    path = tmp_path / "official.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in official_rows()))
    return path


def test_official_format_keeps_the_given_steps_template_and_shared_prefix(model_dir, official_file):
    from tpo.data import load_trees

    tree = load_trees(official_file)[0]
    assert tree.prompt == PROMPT + "\n\n### Response:\n" and tree.scores == [100, 20, -40, -90]
    assert tree.prefix_steps == [2, 1, 0, 0] and tree.steps[3] == ["Step 1: 2 plus 3 = 6"]
    cfg = _cfg(model_dir, official_file, official_file.parent)
    stage = prepare_hf(cfg)
    ids, steps = stage.tok.encode_response(tree.steps[1])
    assert steps == [0] * 8 + [1] * 3 + [1] and ids[-1] == stage.tok.eos
    bad = official_file.parent / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": PROMPT, "response_list": [{"response": []}]}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: response_list\[0\]"):
        load_trees(bad)


def test_full_preset_trains_a_tiny_llama_on_official_trees_and_eval_reloads_it(
    model_dir, official_file, tmp_path, capsys
):
    """The paper's setting end to end from the command line: full preset, --device cpu, LoRA on a
    local Llama folder, official-format trees; eval reloads the adapters (same numbers) and
    also measures on a user's tree file."""
    out = tmp_path / "full"
    common = ["--device", "cpu", "--model-dir", str(model_dir), "--trees", str(official_file)]
    argv = ["train", "--preset", "full", *common, "--out", str(out), "--pref-steps", "2"]
    assert main([*argv, "--pref-lr", "1e-2", "--quiet"]) == 0
    saved = json.loads((out / "config.json").read_text())
    assert saved["step_merge"] == "official" and saved["dpo_reward"] == "mean"
    assert saved["lora_r"] == 8 and saved["pref_lr"] == 1e-2 and saved["method"] == "tpo"
    metrics = json.loads((out / "metrics.json").read_text())
    capsys.readouterr()
    assert main(["eval", "--out", str(out), "--device", "cpu", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out) == pytest.approx(metrics)
    user = tmp_path / "user.jsonl"
    user.write_text("".join(json.dumps(r) + "\n" for r in official_rows(3)))
    argv = ["eval", "--out", str(out), "--model-dir", str(model_dir)]
    assert main([*argv, "--trees", str(user), "--device", "cpu", "--quiet"]) == 0
    on_user = json.loads(capsys.readouterr().out)
    assert set(on_user) == {"ndcg", "kendall_tau", "sibling_margin"}
    assert all(math.isfinite(v) for v in on_user.values())


def test_full_preset_bench_on_demo_assets_writes_structured_claims(tmp_path):
    """bench --preset full --demo: a tiny random Llama and official-format trees written by
    the command, every method over 3 seeds, ranking claims with their verdicts."""
    res = tmp_path / "res"
    argv = ["bench", "--preset", "full", "--device", "cpu", "--demo", str(tmp_path / "demo")]
    argv += ["--seeds", "0", "1", "2", "--pref-steps", "1", "--results-dir", str(res)]
    assert main([*argv, "--out", str(tmp_path / "run"), "--quiet"]) == 0
    doc = json.loads((res / "full.json").read_text())
    ids = {c["id"] for c in doc["claims"]}
    assert ids == {
        "tpo-ranks-better-than-dpo",
        "asr-raises-sibling-margin",
        "control-shuffled-not-above-dpo-ndcg",
    }
    assert all(c["test"][0]["n"] == 3 for c in doc["claims"])
    assert doc["config"]["model_dir"].endswith("model")
