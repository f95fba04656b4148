"""The peft-style front end on transformers models built from configs: a tiny ConvNeXt (Conv2d,
depthwise Conv2d, Linear) and a tiny GPT-2 (HF Conv1D); save/load, merge_and_unload."""

from __future__ import annotations

import pytest
import torch
from transformers import ConvNextConfig, ConvNextModel, GPT2Config, GPT2LMHeadModel
from transformers.pytorch_utils import Conv1D

from flora.adapter import FLoRA, flora_modules
from flora.tuner import FLoRAConfig, FLoRAModel, get_flora_model


def randomise_cores(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in flora_modules(model).values():
            m.core.copy_(torch.randn(m.core.shape, generator=g))


def tiny_gpt2():
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=16, n_head=2, n_positions=16, vocab_size=50)
    return GPT2LMHeadModel(config).eval()


def tiny_convnext():
    torch.manual_seed(0)
    return ConvNextModel(ConvNextConfig(num_stages=2, depths=[1, 1], hidden_sizes=[8, 16])).eval()


def test_gpt2_conv1d_round_trip_and_merge(tmp_path):
    model, ids = tiny_gpt2(), torch.randint(0, 50, (2, 8))
    before = model(ids).logits
    wrapped = get_flora_model(model, FLoRAConfig(target_modules=["c_attn", "c_fc"], r=4, scale=2.0))
    assert wrapped.targets and all(
        isinstance(m.base, Conv1D) for m in flora_modules(model).values()
    )
    assert torch.allclose(wrapped(ids).logits, before, atol=1e-6)  # zero core: no change
    randomise_cores(wrapped)
    tuned = wrapped(ids).logits
    assert not torch.allclose(tuned, before, atol=1e-3)
    layer = wrapped.model.transformer.h[0].attn.c_attn
    x = torch.randn(3, 16)
    assert torch.allclose(layer(x), x @ (layer.base.weight + layer.delta_weight()) + layer.base.bias,
                          atol=1e-5)  # fmt: skip
    wrapped.save_pretrained(tmp_path / "adapter")
    again = FLoRAModel.from_pretrained(tiny_gpt2(), tmp_path / "adapter")
    assert torch.allclose(again(ids).logits, tuned, atol=1e-5)
    plain = again.merge_and_unload()
    assert not flora_modules(plain) and isinstance(plain.transformer.h[0].attn.c_attn, Conv1D)
    assert torch.allclose(plain(ids).logits, tuned, atol=1e-4)


def test_convnext_targets_by_name_with_depthwise_and_kernel_rank():
    model, x = tiny_convnext(), torch.randn(2, 3, 32, 32)
    config = FLoRAConfig(target_modules=("dwconv", "pwconv1"), r=4, kernel_rank=2)
    wrapped = get_flora_model(model, config)
    layers = flora_modules(model)
    assert len(layers) == 4 and all(n.endswith(("dwconv", "pwconv1")) for n in layers)
    dw = next(m for n, m in layers.items() if n.endswith("dwconv"))
    assert dw.ranks == (4, 1, 2, 2)  # in/groups = 1 on a depthwise conv
    randomise_cores(wrapped)
    out = wrapped(pixel_values=x).pooler_output
    assert torch.allclose(wrapped.merge_and_unload()(pixel_values=x).pooler_output, out, atol=1e-4)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert trainable == 0  # merge_and_unload leaves the frozen base


def test_regex_target_and_bad_inputs(tmp_path):
    wrapped = get_flora_model(
        tiny_gpt2(), FLoRAConfig(target_modules=r".*\.h\.0\.mlp\.c_proj", r=2)
    )
    assert wrapped.targets == ["transformer.h.0.mlp.c_proj"]
    assert isinstance(wrapped.model.transformer.h[0].mlp.c_proj, FLoRA)
    with pytest.raises(ValueError, match="matches no module"):
        get_flora_model(tiny_gpt2(), FLoRAConfig(target_modules=["nothing_here"]))
    with pytest.raises(ValueError, match="r must be >= 1"):
        FLoRAConfig(target_modules=["c_fc"], r=0)
    with pytest.raises(ValueError, match="has no adapter_config.json"):
        FLoRAModel.from_pretrained(tiny_gpt2(), tmp_path)
    (tmp_path / "adapter_config.json").write_text('{"rank": 3}')
    (tmp_path / "adapter_model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="is not a FLoRA adapter config"):
        FLoRAModel.from_pretrained(tiny_gpt2(), tmp_path)
