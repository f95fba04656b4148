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

    def encode_response(self, response: str) -> tuple[list[int], list[int]]:
        """Ids of each step's text, then <eos>; text before the first marker belongs to step 0."""
        starts = [m.start() for m in self.pattern.finditer(response) if m.start() > 0]
        cuts = [0, *starts, len(response)]
        ids: list[int] = []
        steps: list[int] = []
        for k, (a, b) in enumerate(itertools.pairwise(cuts)):
            piece = self._ids(response[a:b])
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
