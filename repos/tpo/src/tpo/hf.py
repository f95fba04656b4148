"""The paper's setting: a local pretrained transformers causal LM, fine-tuned with LoRA (peft) on
preference trees read from JSONL, as the official tpo_train.py does (r = 8, alpha = 16, dropout
0.1 on all linear layers).

The frozen reference is the same network with its adapters disabled, so no second copy is held;
its per-step log-probs are computed once (`reference_steps`) before training. Responses are split
into steps by a regular expression (default "Step k:", the official data format) and each step
is tokenised on its own, so token boundaries never cross a step boundary.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import torch

from .config import Config, check_model_dir
from .data import Tree, load_trees
from .evaluation import reference_steps
from .results import load_safetensors
from .stage import Stage


class HFTokenizer:
    """A transformers tokenizer behind the interface `encode_pairs` uses."""

    def __init__(self, tokenizer, step_pattern: str) -> None:
        self.inner = tokenizer
        self.pattern = re.compile(step_pattern)
        self.eos = tokenizer.eos_token_id
        if self.eos is None:
            raise ValueError("the tokenizer defines no eos token; responses need an end marker")
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos
        self.bos = tokenizer.bos_token_id

    def has_step(self, response: str) -> bool:
        return self.pattern.search(response) is not None

    def _ids(self, text: str) -> list[int]:
        return list(self.inner(text, add_special_tokens=False)["input_ids"])

    def encode_prompt(self, prompt: str) -> list[int]:
        return ([] if self.bos is None else [self.bos]) + self._ids(prompt)

    def encode_response(self, response: str | list[str]) -> tuple[list[int], list[int]]:
        """Ids of each step's text, then <eos>; text before the first marker belongs to step 0.
        A list (the official format's steps) gives the steps directly."""
        if isinstance(response, str):
            starts = [m.start() for m in self.pattern.finditer(response) if m.start() > 0]
            cuts = [0, *starts, len(response)]
            pieces = [response[a:b] for a, b in itertools.pairwise(cuts)]
        else:
            pieces = list(response)
        ids: list[int] = []
        steps: list[int] = []
        for k, text in enumerate(pieces):
            piece = self._ids(text)
            ids += piece
            steps += [k] * len(piece)
        if not ids:
            raise ValueError(f"response {response[:40]!r} has no tokens")
        return ids + [self.eos], steps + [steps[-1]]


def load_lora_policy(cfg: Config) -> tuple[torch.nn.Module, HFTokenizer]:
    """The causal LM and tokenizer from cfg.model_dir (no download), with fresh LoRA adapters."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    check_model_dir(cfg.model_dir)
    try:
        tokenizer = AutoTokenizer.from_pretrained(cfg.model_dir, local_files_only=True)
        base = AutoModelForCausalLM.from_pretrained(cfg.model_dir, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(
            f"{cfg.model_dir}: cannot load a causal LM and its tokenizer ({exc})"
        ) from None
    lora = LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(base, lora).to(cfg.device), HFTokenizer(tokenizer, cfg.step_pattern)


def split_trees(trees: list[Tree], seed: int) -> tuple[list[Tree], list[Tree]]:
    """85/15 train/validation split, as tpo_train.py (at least one tree on each side)."""
    if len(trees) < 2:
        raise ValueError(f"need at least 2 trees to hold some out, got {len(trees)}")
    order = np.random.default_rng([seed, 7]).permutation(len(trees))
    n_held = min(len(trees) - 1, max(1, round(0.15 * len(trees))))
    return [trees[i] for i in order[n_held:]], [trees[i] for i in order[:n_held]]


def prepare_hf(cfg: Config):
    """A Stage for the LoRA policy: trees from cfg.trees, reference log-probs with the adapters
    off, no arithmetic test problems (the metrics are the held-out ranking figures)."""
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    model, tok = load_lora_policy(cfg)
    train, held = split_trees(load_trees(cfg.trees, tok.has_step), cfg.seed)
    model.eval()
    with model.disable_adapter():
        ref_train = reference_steps(model, tok, train, cfg.device)
        ref_held = reference_steps(model, tok, held, cfg.device)
    return Stage(tok, model, train, held, [], [], [], ref_train, ref_held, in_place=True)


def load_adapters(model: torch.nn.Module, folder: Path) -> None:
    """Load the LoRA adapters `train` saved (folder/adapter_model.safetensors) into a policy from
    load_lora_policy; a missing, corrupt or mismatched file is a ValueError naming it."""
    from peft import set_peft_model_state_dict

    path = folder / "adapter_model.safetensors"
    state = load_safetensors(path)
    try:
        result = set_peft_model_state_dict(model, state)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ValueError(f"{path}: does not fit the run's LoRA policy ({first})") from None
    if result.unexpected_keys:
        raise ValueError(f"{path}: adapters the policy lacks: {result.unexpected_keys[:3]}")


DEMO_WORDS = [
    *("What", "is", "plus", "times", "?", "###", "Response:", "Step", "1:", "2:", "=", "."),
    *("so", "the", "answer"),
    *map(str, range(13)),
]


def demo_trees(n: int, rng: np.random.Generator) -> list[dict]:
    """n trees in the official format: a gold two-step solution (score 100), two branches that
    go wrong at step 1 or 2, and a wrong trajectory (the official lists hold five)."""
    out = []
    for _ in range(n):
        a, b = (int(x) for x in rng.integers(2, 5, size=2))
        c = a + b
        gold = [f"Step 1: {a} plus {b} = {c} . ", f"Step 2: so the answer is {c}"]
        late = [gold[0], f"Step 2: so the answer is {c + 1}"]
        early = [f"Step 1: {a} plus {b} = {c + 2} . ", f"Step 2: so the answer is {c + 2}"]
        wrong = [f"Step 1: {a} times {b} = {c + 3} . ", "Step 2: so the answer is 2"]
        scored = [(gold, 100), (late, 20), (early, -40), (wrong, -90)]
        out.append(
            {
                "prompt": f"What is {a} plus {b} ?",
                "response_list": [{"response": r, "score": v} for r, v in scored],
            }
        )
    return out


def write_demo(folder: str | Path, seed: int = 0, n_trees: int = 12) -> tuple[Path, Path]:
    """A tiny random LlamaForCausalLM with a word-level tokenizer (folder/model) and n_trees
    official-format trees (folder/trees.jsonl); returns both paths."""
    import json

    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = Path(folder)
    model_dir = folder / "model"
    words = ["<pad>", "<s>", "</s>", "<unk>", *dict.fromkeys(DEMO_WORDS)]
    raw = Tokenizer(WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    raw.pre_tokenizer = WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
    )
    tok.save_pretrained(model_dir)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(words),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    LlamaForCausalLM(config).save_pretrained(model_dir)
    trees = folder / "trees.jsonl"
    rows = demo_trees(n_trees, np.random.default_rng([seed, 11]))
    trees.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return model_dir, trees
