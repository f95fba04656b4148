"""The policy: a small GPT-2 built from a transformers config (or any local transformers causal
LM folder, optionally with LoRA through peft), with a value head, and a tokenizer (a local
word-level one, or the folder's own). Batched sampling/greedy generation and per-token scoring.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from transformers import GPT2Config, GPT2LMHeadModel

from .env import ANSWER, SEARCH

ACTION_TOKENS = ("<pad>", "<eos>", "<sep>", SEARCH, ANSWER)
"""Tokens added to a pretrained tokenizer as single special tokens."""


def build_tokenizer(words: list[str]) -> Tokenizer:
    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = WhitespaceSplit()
    return tok


class Policy(torch.nn.Module):
    """Causal LM pi_theta plus a scalar value head on the last hidden layer (actor-critic)."""

    def __init__(self, lm: torch.nn.Module):
        super().__init__()
        self.lm = lm
        self.value_head = torch.nn.Linear(lm.config.hidden_size, 1)

    @classmethod
    def from_config(
        cls, vocab_size: int, n_layer: int, d_model: int, n_head: int, n_positions: int
    ) -> Policy:
        """A GPT-2 of the given size built from a transformers config (no weights loaded)."""
        cfg = GPT2Config(
            vocab_size=vocab_size,
            n_positions=n_positions,
            n_embd=d_model,
            n_layer=n_layer,
            n_head=n_head,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=0,
            eos_token_id=2,
            pad_token_id=0,
        )
        return cls(GPT2LMHeadModel(cfg))

    @classmethod
    def from_pretrained(cls, path: str, vocab_size: int, lora_r: int = 0) -> Policy:
        """A local transformers causal LM folder (no hub access) as pi_theta.

        The embeddings are resized to `vocab_size` (the action tokens added to the tokenizer).
        With `lora_r > 0` the LM gets LoRA adapters of rank r on every linear layer (peft), and
        only the adapters, the (resized) embeddings and the value head train: the way to fit a
        7B policy on one GPU.
        """
        from transformers import AutoModelForCausalLM

        if not Path(path).is_dir():
            raise ValueError(f"policy folder {path} does not exist")
        lm = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        lm.resize_token_embeddings(vocab_size)
        if lora_r > 0:
            from peft import LoraConfig, get_peft_model

            lora = LoraConfig(r=lora_r, lora_alpha=2 * lora_r, target_modules="all-linear",
                              lora_dropout=0.0, task_type="CAUSAL_LM")  # fmt: skip
            lm = get_peft_model(lm, lora)
            lm.get_input_embeddings().weight.requires_grad_(True)
        return cls(lm)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits [B, L, V] and values [B, L] for left-padded `ids` with attention `mask`."""
        pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
        out = self.lm(
            input_ids=ids, attention_mask=mask, position_ids=pos, output_hidden_states=True
        )
        return out.logits, self.value_head(out.hidden_states[-1]).squeeze(-1)


class Codec:
    """Text <-> left-padded id tensors for one tokenizer."""

    def __init__(self, tok: Tokenizer):
        self.tok = tok
        self.pad, self.eos = tok.token_to_id("<pad>"), tok.token_to_id("<eos>")
        self.search, self.answer = tok.token_to_id(SEARCH), tok.token_to_id(ANSWER)
        self.special = {tok.token_to_id(t) for t in ACTION_TOKENS}

    @classmethod
    def from_pretrained(cls, path: str) -> Codec:
        """The tokenizer of a local transformers folder plus the action tokens as special tokens."""
        from transformers import AutoTokenizer

        if not Path(path).is_dir():
            raise ValueError(f"policy folder {path} does not exist")
        hf = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if not hf.is_fast:
            raise ValueError(f"{path}: need a fast (tokenizers) tokenizer, got {type(hf).__name__}")
        hf.add_tokens(list(ACTION_TOKENS), special_tokens=True)
        return cls(hf.backend_tokenizer)

    def encode(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tok.encode_batch(texts)]

    def tokens(self, ids: list[int]) -> list[str]:
        return [self.tok.id_to_token(i) for i in ids]

    def words(self, ids: list[int]) -> list[str]:
        """Whitespace words of generated ids: action tokens kept whole, the rest decoded."""
        out: list[str] = []
        run: list[int] = []
        for i in [*ids, None]:
            if i is None or i in self.special:
                out += self.tok.decode(run).split() if run else []
                run = []
                if i is not None:
                    out.append(self.tok.id_to_token(i))
            else:
                run.append(i)
        return out

    def left_pad(self, rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r) :] = 1
        return ids, mask


def first_token_mask(
    logits: torch.Tensor, codec: Codec, force_answer: torch.Tensor
) -> torch.Tensor:
    """Quota masking: where `force_answer`, `[SEARCH]` gets probability zero at a_0."""
    logits = logits.clone()
    logits[force_answer, codec.search] = float("-inf")
    return logits


@torch.no_grad()
def generate(
    policy: Policy,
    codec: Codec,
    prompts: list[list[int]],
    max_new: int,
    force_answer: torch.Tensor,
    sample: bool,
    generator: torch.Generator | None = None,
    first: torch.Tensor | None = None,
) -> list[list[int]]:
    """Generate one action per prompt (until <eos> or `max_new` tokens).

    `first` fixes a_0 (the decision) where given (>= 0); otherwise a_0 is sampled or taken
    greedily, with `[SEARCH]` masked where `force_answer` (the quota).
    """
    ids, mask = codec.left_pad(prompts)
    n = len(prompts)
    out = [[] for _ in range(n)]
    done = torch.zeros(n, dtype=torch.bool)
    for t in range(max_new):
        logits = policy(ids, mask)[0][:, -1].float()
        if t == 0:
            logits = first_token_mask(logits, codec, force_answer)
        if sample:
            nxt = torch.multinomial(torch.softmax(logits, -1), 1, generator=generator).squeeze(1)
        else:
            nxt = logits.argmax(-1)
        if t == 0 and first is not None:
            nxt = torch.where(first >= 0, first, nxt)
        nxt = torch.where(done, torch.full_like(nxt, codec.pad), nxt)
        for i in range(n):
            if not done[i]:
                out[i].append(int(nxt[i]))
        done |= nxt == codec.eos
        ids = torch.cat([ids, nxt[:, None]], 1)
        mask = torch.cat([mask, (~done | (nxt == codec.eos)).long()[:, None]], 1)
        if bool(done.all()):
            break
    return out


def score(
    policy: Policy, codec: Codec, prompts: list[list[int]], actions: list[list[int]],
    force_answer: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    """Per-action-token log pi(a_t | s, a_<t), entropy, value V(s, a_<t) and a validity mask.

    Returned tensors are [B, T] with T the longest action; the quota mask is applied to a_0 so
    the scored distribution is the one the tokens were sampled from.
    """
    rows = [p + a for p, a in zip(prompts, actions, strict=True)]
    width = max(len(r) for r in rows)
    t_max = max(len(a) for a in actions)
    ids = torch.full((len(rows), width), codec.pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    # Right-align each row so that every action ends at the last column.
    for i, r in enumerate(rows):
        ids[i, width - len(r) :] = torch.tensor(r)
        mask[i, width - len(r) :] = 1
    logits, values = policy(ids, mask)
    n = len(rows)
    logp = torch.zeros(n, t_max)
    ent = torch.zeros(n, t_max)
    val = torch.zeros(n, t_max)
    valid = torch.zeros(n, t_max, dtype=torch.bool)
    for i, a in enumerate(actions):
        start = width - len(a) - 1  # position whose output predicts a_0
        lg = logits[i, start : start + len(a)].float()
        if bool(force_answer[i]):
            lg = lg.clone()
            lg[0, codec.search] = float("-inf")
        lp = torch.log_softmax(lg, -1)
        tgt = torch.tensor(a)
        logp[i, : len(a)] = lp.gather(1, tgt[:, None]).squeeze(1)
        probs = lp.exp()
        ent[i, : len(a)] = -(probs * torch.where(probs > 0, lp, torch.zeros_like(lp))).sum(-1)
        val[i, : len(a)] = values[i, start : start + len(a)]
        valid[i, : len(a)] = True
    return logp, ent, val, valid


def lm_loss(policy: Policy, codec: Codec, texts: list[str], contexts: list[str]) -> torch.Tensor:
    """Cross-entropy of next-token prediction; the tokens of `contexts[i]` (a prefix of
    `texts[i]`, "" for none) are context only.

    Padding never enters the loss (the official SFT collator padded labels with 0 instead of
    -100, so pad tokens were trained on; we do not copy that).
    """
    rows = codec.encode(texts)
    starts = [len(r) if c else 0 for r, c in zip(codec.encode(contexts), contexts, strict=True)]
    ids, mask = codec.left_pad(rows)
    labels = ids.clone()
    labels[mask == 0] = -100
    width = ids.shape[1]
    for i, (r, start) in enumerate(zip(rows, starts, strict=True)):
        labels[i, : width - len(r) + start] = -100
    logits, _ = policy(ids, mask)
    return torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]).float(), labels[:, 1:].reshape(-1)
    )
