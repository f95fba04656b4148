"""The model and its hook points: a GPT-2 built from a transformers config, or any local causal LM.

The analysis needs two hook points per layer: the input of the attention output projection
(the heads' outputs, concatenated) and the input of the MLP output projection, which is the
neuron activation h_post (the MLP writes sum_n h_post^n v_out^n to the residual stream).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from torch import nn

from .config import Config
from .data import Vocab

MLP_OUT = re.compile(
    r"\.(\d+)\.(?:mlp|feed_forward)\.(c_proj|down_proj|dense_4h_to_h|fc_out|fc2|w2)$"
)
ATTN_OUT = re.compile(r"\.(\d+)\.(?:attn|self_attn|attention)\.(c_proj|o_proj|dense|out_proj)$")


def build_model(cfg: Config, vocab: Vocab) -> nn.Module:
    """A GPT-2 language model from a config (no hub weights); dropout off, GELU MLPs."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=vocab.size,
        n_positions=8,
        n_embd=cfg.d_model,
        n_layer=cfg.n_layer,
        n_head=cfg.n_head,
        n_inner=cfg.d_mlp,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=vocab.bos,
        eos_token_id=vocab.bos,
        activation_function="gelu",
    )
    return GPT2LMHeadModel(config)


def load_checkpoint(path: str | Path, device: str = "cpu", vocab: Vocab | None = None) -> nn.Module:
    """A local Hugging Face causal-LM folder (no download); raise if it has no MLP modules. With
    `vocab` and a tokenizer saved in the folder (a pretrained LM: Llama-3, Pythia), the model is
    returned as a VocabView that reads and answers our prompt ids through that tokenizer."""
    from transformers import AutoModelForCausalLM

    if not Path(path).is_dir():
        raise ValueError(f"checkpoint must be a local model folder; {str(path)!r} not found")
    try:
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        # a missing or malformed config.json / weights file: one line naming the folder
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"checkpoint {str(path)!r} is not a loadable Hugging Face causal-LM folder "
            f"(config.json and weights): {first[:200]}"
        ) from None
    locate(model)
    has_tokenizer = any((Path(path) / f).exists() for f in TOKENIZER_FILES)
    if vocab is not None and has_tokenizer:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = VocabView(model, tokenizer_ids(tokenizer, vocab, str(path)))
    return model.to(device).eval()


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


def tokenizer_ids(tokenizer, vocab: Vocab, where: str = "tokenizer") -> torch.Tensor:
    """[vocab.size] tokenizer id of each of our ids (numbers, + - * /, '=', BOS); ValueError
    naming the first symbol the tokenizer does not keep as one token."""
    from .config import OPERATORS

    symbols = [str(n) for n in range(vocab.n_numbers)] + list(OPERATORS) + ["="]
    ids = []
    for sym in symbols:
        got = tokenizer.encode(sym, add_special_tokens=False)
        if len(got) != 1 or got[0] == tokenizer.unk_token_id:
            raise ValueError(
                f"{where}: the tokenizer has no single token for {sym!r} ({len(got)} tokens"
                f"{', unknown' if got == [tokenizer.unk_token_id] else ''}); the prompts need "
                f"every number below n_numbers = {vocab.n_numbers} as one token"
            )
        ids.append(got[0])
    if tokenizer.bos_token_id is None:
        raise ValueError(f"{where}: the tokenizer has no BOS token")
    ids.append(tokenizer.bos_token_id)
    return torch.as_tensor(ids, dtype=torch.long)


class VocabView(nn.Module):
    """A pretrained causal LM seen through our prompt vocabulary: our ids become the tokenizer's
    on the way in, and the logits of those tokens come back in our order (numbers first), so
    every analysis runs unchanged. The LM's own MLPs and heads stay the hook points."""

    def __init__(self, lm: nn.Module, token_ids: torch.Tensor):
        super().__init__()
        self.lm = lm
        self.config = lm.config
        self.register_buffer("token_ids", token_ids, persistent=False)

    def forward(self, input_ids: torch.Tensor, **kwargs):
        out = self.lm(input_ids=self.token_ids[input_ids], **kwargs)
        hidden = getattr(out, "hidden_states", None)
        return types.SimpleNamespace(logits=out.logits[..., self.token_ids], hidden_states=hidden)

    def get_output_embeddings(self):
        """W_U restricted to our tokens, in our order (the logit lens)."""
        return types.SimpleNamespace(weight=self.lm.get_output_embeddings().weight[self.token_ids])


@dataclasses.dataclass
class Parts:
    """Hook points of a model: per layer, the attention and MLP output projections."""

    attn_out: list[nn.Module]
    mlp_out: list[nn.Module]
    n_head: int

    @property
    def n_layer(self) -> int:
        return len(self.mlp_out)

    @property
    def d_mlp(self) -> int:
        return value_vectors(self.mlp_out[0]).shape[0]


def locate(model: nn.Module) -> Parts:
    """Find each layer's attention and MLP output projections by module name."""
    mlp, attn = {}, {}
    for name, module in model.named_modules():
        if m := MLP_OUT.search(name):
            mlp[int(m.group(1))] = module
        elif m := ATTN_OUT.search(name):
            attn[int(m.group(1))] = module
    if not mlp:
        raise ValueError(
            f"no MLP output projection found in {type(model).__name__}: expected modules named "
            "like '<layer>.mlp.c_proj' or '<layer>.mlp.down_proj'; this model cannot be analysed"
        )
    layers = sorted(mlp)
    n_head = getattr(model.config, "num_attention_heads", None) or model.config.n_head
    return Parts([attn.get(i) for i in layers], [mlp[i] for i in layers], int(n_head))


def value_vectors(proj: nn.Module) -> torch.Tensor:
    """[d_mlp, d_model]: row n is v_out^n, what neuron n writes per unit of activation."""
    weight = proj.weight
    if type(proj).__name__ == "Conv1D":  # GPT-2 stores [in, out]
        return weight
    return weight.T


def unembedding(model: nn.Module) -> torch.Tensor:
    """[vocab, d_model] W_U used by the logit lens."""
    return model.get_output_embeddings().weight


Edit = Callable[[int, torch.Tensor], torch.Tensor | None]
"""Called with (layer, input of the projection [N, T, D]); returns a replacement or None."""


@contextlib.contextmanager
def hooked(parts: Parts, mlp: Edit | None = None, attn: Edit | None = None) -> Iterator[None]:
    """Run the model with edits of the MLP and/or attention output projections' inputs."""
    handles = []

    def pre_hook(layer: int, edit: Edit):
        def hook(_module, args):
            new = edit(layer, args[0])
            return None if new is None else (new, *args[1:])

        return hook

    for edit, modules in ((mlp, parts.mlp_out), (attn, parts.attn_out)):
        if edit is None:
            continue
        for layer, module in enumerate(modules):
            if module is None:
                raise ValueError(f"layer {layer} has no attention output projection to hook")
            handles.append(module.register_forward_pre_hook(pre_hook(layer, edit)))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def last_logits(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """[N, vocab] logits at the last position (where the result is predicted)."""
    return model(input_ids=tokens).logits[:, -1, :]


def cache(model: nn.Module, parts: Parts, tokens: torch.Tensor) -> dict[str, list[torch.Tensor]]:
    """Inputs of every output projection, all positions: {'mlp': [L x [N,T,d_mlp]], 'attn': ...}."""
    store: dict[str, list[torch.Tensor]] = {
        "mlp": [None] * parts.n_layer,
        "attn": [None] * parts.n_layer,
    }

    def keep(kind: str) -> Edit:
        def edit(layer: int, x: torch.Tensor) -> None:
            store[kind][layer] = x.detach().clone()

        return edit

    with torch.no_grad(), hooked(parts, mlp=keep("mlp"), attn=keep("attn")):
        model(input_ids=tokens)
    return store
