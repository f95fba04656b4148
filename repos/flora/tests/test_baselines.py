"""Baselines at equal budget (DoRA, LyCORIS LoCon-Tucker, LoHa, LoKr), the flat ablation, and the
two structure results that hold by parameter arithmetic (kept as tests, not claims)."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from torch import nn

from flora.adapter import FLoRA, apply_flora
from flora.baselines import LoConTucker, prepare, rank_for_budget, trainable_count
from flora.models import SmallCNN
from flora.train import train_and_evaluate


@pytest.mark.parametrize("method", ["dora", "locon_tucker", "loha", "lokr", "flora_flat"])
def test_every_adapter_stays_within_loras_budget(method):
    model = SmallCNN()
    lora = trainable_count(prepare("lora", copy.deepcopy(model), r"conv[234]", "head", 4, 1.0))
    rank = rank_for_budget(method, model, r"conv[234]", "head", 4)
    ours = trainable_count(prepare(method, copy.deepcopy(model), r"conv[234]", "head", rank, 1.0))
    extra = 32 + 64 + 64 if method == "dora" else 0  # DoRA: LoRA's rank + one magnitude per output
    assert ours <= lora + extra
    if method == "locon_tucker":  # the next rank would exceed the budget
        bigger = prepare(method, copy.deepcopy(model), r"conv[234]", "head", rank + 1, 1.0)
        assert trainable_count(bigger) > lora


def test_locon_tucker_is_a_tucker2_update_and_starts_at_zero():
    torch.manual_seed(0)
    conv = nn.Conv2d(6, 8, 3, padding=1)
    layer, x = LoConTucker(copy.deepcopy(conv), rank=3, alpha=3.0), torch.randn(2, 6, 5, 5)
    assert torch.allclose(layer(x), conv(x), atol=1e-6)  # up-projection starts at zero
    shapes = sorted(tuple(p.shape) for p in layer.parameters() if p.requires_grad)
    assert shapes == [(3, 3, 3, 3), (3, 6, 1, 1), (8, 3, 1, 1)]
    with torch.no_grad():
        layer.lyco.lora_up.weight.normal_()
    delta = layer.lyco.get_diff_weight()[0]  # alpha / r = 1
    want = nn.functional.conv2d(x, conv.weight + delta, conv.bias, padding=1)
    assert delta.abs().sum() > 0 and torch.allclose(layer(x), want, atol=1e-5)


def test_flat_ablation_is_a_three_factor_lora_on_the_flattened_kernel():
    torch.manual_seed(0)
    layer = FLoRA(nn.Conv2d(4, 6, 3), (3, 5), scale=2.0, flat=True)
    with torch.no_grad():
        layer.core.normal_()
    a, b = layer.factors
    assert a.shape == (6, 3) and b.shape == (36, 5)
    want = (2.0 * a @ layer.core @ b.T).reshape(6, 4, 3, 3)
    assert torch.allclose(layer.delta_weight(), want, atol=1e-6)
    model = SmallCNN()
    apply_flora(model, "conv3", lambda shape: (4, 4), flat=True)
    assert model.conv3.flat and model.conv3.delta_weight().shape == (64, 32, 3, 3)


def test_structure_results_hold_by_parameter_arithmetic(tiny, tmp_path):
    """On a Tucker-rank (3, 3, 3, 3) target both recover it at rank 3 (its out-mode unfolding has
    rank 3), FLoRA with half the parameters, and LoRA at rank 2 cannot; on a matrix-rank-3 target
    LoRA recovers it and FLoRA at ranks (3, 3, 3, 3) cannot (its in-mode has full rank)."""
    cfg = dataclasses.replace(tiny, task="structure", struct_channels=12, struct_levels=(2, 3),
                              teacher_tucker_ranks=(3, 3, 3, 3), teacher_matrix_rank=3,
                              struct_steps=400, struct_batch=64)  # fmt: skip
    flora = train_and_evaluate(dataclasses.replace(cfg, method="flora"), tmp_path / "f")
    lora = train_and_evaluate(dataclasses.replace(cfg, method="lora"), tmp_path / "l")
    assert (
        max(flora["tucker_relerr_r3"], lora["tucker_relerr_r3"]) < 0.05 < lora["tucker_relerr_r2"]
    )
    assert 2 * flora["tucker_params_r3"] < lora["tucker_params_r3"]
    assert lora["matrix_relerr_r3"] < 0.05 < flora["matrix_relerr_r3"]
