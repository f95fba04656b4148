"""The policy: a small causal LM built from a transformers config, batching of (prompt, response)
pairs with response and step masks, next-token log-probabilities, and sampling."""

from __future__ import annotations

import dataclasses

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from .data import Tokenizer


def build_policy(vocab_size: int, n_layer: int, d_model: int, n_head: int) -> GPT2LMHeadModel:
    """GPT-2 from a config (no hub weights); dropout off so policy and reference agree at start."""
    cfg = GPT2Config(
        vocab_size=vocab_size,
        n_positions=128,
        n_embd=d_model,
        n_layer=n_layer,
        n_head=n_head,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    return GPT2LMHeadModel(cfg)


@dataclasses.dataclass
class Batch:
    """Right-padded token ids with masks, all (B, L).
    response_mask: 1 on response tokens (including <eos>), 0 on <bos>, prompt and padding.
    step_ids: index k of the step a response token belongs to ("S" opens a step; the answer
    belongs to the last step); -1 on prompt and padding."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    response_mask: torch.Tensor
    step_ids: torch.Tensor

    def to(self, device: str | torch.device) -> Batch:
        return Batch(*(t.to(device) for t in dataclasses.astuple(self)))

    def select(self, rows: torch.Tensor) -> Batch:
        """The given rows, cut to their longest sequence (right padding only)."""
        width = int(self.attention_mask[rows].sum(1).max())
        return Batch(*(t[rows, :width] for t in dataclasses.astuple(self)))


def encode_pairs(tok: Tokenizer, prompts: list[str], responses: list[str]) -> Batch:
    """Right-padded batch of prompt + response rows; `tok` is our Tokenizer or `hf.HFTokenizer`
    (anything with encode_prompt, encode_response and pad)."""
    rows = []
    for prompt, response in zip(prompts, responses, strict=True):
        p = tok.encode_prompt(prompt)
        r, steps = tok.encode_response(response)
        rows.append((p + r, [0] * len(p) + [1] * len(r), [-1] * len(p) + steps))
    width = max(len(ids) for ids, _, _ in rows)
    ids = torch.full((len(rows), width), tok.pad)
    attn, resp = torch.zeros(len(rows), width), torch.zeros(len(rows), width)
    step_ids = torch.full((len(rows), width), -1)
    for i, (a, m, s) in enumerate(rows):
        ids[i, : len(a)] = torch.tensor(a)
        attn[i, : len(a)] = 1
        resp[i, : len(a)] = torch.tensor(m, dtype=torch.float)
        step_ids[i, : len(a)] = torch.tensor(s)
    return Batch(ids, attn, resp, step_ids)


def token_logps(logits: torch.Tensor, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log pi(y_t | x, y_<t) of every response token, (B, L-1), zero where mask is 0.
    Position t of the output scores token t+1 with the distribution after token t (the next-token
    shift the official compute_tpo_logprobs omits; it scores every token with position 0)."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    picked = logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return picked * mask[:, 1:]


def forward(
    model: GPT2LMHeadModel, batch: Batch, hidden: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token response log-probs (B, L-1) and, if asked, last-layer hidden states (B, L-1, d)
    of the same target tokens."""
    out = model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        output_hidden_states=hidden,
    )
    logps = token_logps(out.logits, batch.input_ids, batch.response_mask)
    states = out.hidden_states[-1][:, 1:] if hidden else None
    return logps, states


@torch.no_grad()
def generate(
    model: GPT2LMHeadModel,
    tok: Tokenizer,
    contexts: list[list[int]],
    max_new: int,
    temperature: float,
    generator: torch.Generator | None = None,
) -> list[list[int]]:
    """Continue each context (left-padded, explicit positions, key/value cache: each new token
    costs one position of compute instead of the whole sequence); temperature 0 is greedy.
    Returns the new tokens of each row, cut after <eos>."""
    device = next(model.parameters()).device
    width = max(len(c) for c in contexts)
    ids = torch.full((len(contexts), width), tok.pad, dtype=torch.long)
    attn = torch.zeros(len(contexts), width, dtype=torch.long)
    for i, c in enumerate(contexts):
        ids[i, width - len(c) :] = torch.tensor(c)
        attn[i, width - len(c) :] = 1
    ids, attn = ids.to(device), attn.to(device)
    pos = (attn.cumsum(1) - 1).clamp(min=0)
    out = model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True)
    done = torch.zeros(len(contexts), dtype=torch.bool, device=device)
    new = []
    for step in range(max_new):
        logits = out.logits[:, -1].float()
        if temperature == 0:
            nxt = logits.argmax(-1)
        else:
            probs = torch.softmax(logits / temperature, -1).cpu()
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1).to(device)
        nxt = torch.where(done, torch.full_like(nxt, tok.pad), nxt)
        new.append(nxt)
        done |= nxt == tok.eos
        # tokens after <eos> are padding: masked out, so they never influence a live row
        attn = torch.cat([attn, (~done | (nxt == tok.eos)).long()[:, None]], 1)
        if bool(done.all()) or step == max_new - 1:
            break
        pos = (attn.sum(1, keepdim=True) - 1).clamp(min=0)
        out = model(
            input_ids=nxt[:, None],
            attention_mask=attn,
            position_ids=pos,
            cache=out.cache,
            use_cache=True,
        )
    rows = torch.stack(new, 1).tolist()
    return [r[: r.index(tok.eos) + 1] if tok.eos in r else r for r in rows]
