"""The model and its hook points: a GPT-2 built from a transformers config, or any local causal LM.

The analysis needs two hook points per layer: the input of the attention output projection
(the heads' outputs, concatenated) and the input of the MLP output projection, which is the
neuron activation h_post (the MLP writes sum_n h_post^n v_out^n to the residual stream).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
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


def load_checkpoint(path: str | Path, device: str = "cpu") -> nn.Module:
    """A local Hugging Face causal-LM folder (no download); raise if it has no MLP modules."""
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
    return model.to(device).eval()


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
