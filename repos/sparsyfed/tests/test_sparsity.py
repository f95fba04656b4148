"""Global pruning, FedAvg mask preservation, regrowth and IoU on hand-made cases."""

from __future__ import annotations

import pytest
import torch

from sparsyfed.federated import fedavg, state_of
from sparsyfed.models import build_model
from sparsyfed.powerprop import sparsy_layers
from sparsyfed.sparsity import (
    aggregation_regrowth,
    global_magnitude_prune,
    iou,
    layer_densities,
    library_global_prune,
    mean_pairwise_iou,
    regrowth,
)


@pytest.mark.parametrize("arch", ["mlp", "cnn"])
@pytest.mark.parametrize("sparsity", [0.5, 0.9, 0.95])
def test_global_prune_exact_and_equal_to_torch_prune(arch, sparsity):
    ours, ref = build_model(arch, 1.25, True, 0), build_model(arch, 1.25, True, 0)
    biases = {k: v.clone() for k, v in state_of(ours).items() if k.endswith("bias")}
    global_magnitude_prune(ours, sparsity)
    library_global_prune(ref, sparsity)
    weights = torch.cat([v.flatten() for k, v in state_of(ours).items() if k.endswith("weight")])
    assert int((weights == 0).sum()) == round(sparsity * weights.numel())
    for key, value in state_of(ref).items():
        assert torch.equal(state_of(ours)[key], value), key
    for key, value in biases.items():
        assert torch.equal(state_of(ours)[key], value)
    kept_min = weights[weights != 0].abs().min()
    before = build_model(arch, 1.25, True, 0)
    dropped = torch.cat(
        [m.weight.detach().flatten() for m in before.modules() if hasattr(m, "beta")]
    )
    assert float(dropped[weights == 0].abs().max()) <= float(kept_min)


@pytest.mark.parametrize("sparsity", [-0.1, 1.0, 1.5])
def test_bad_sparsity_is_a_clear_error(sparsity):
    with pytest.raises(ValueError, match=r"sparsity must be in \[0, 1\)"):
        global_magnitude_prune(build_model("mlp", 1.0, False, 0), sparsity)


def test_fedavg_of_identically_masked_models_keeps_the_mask():
    models = [build_model("mlp", 1.25, True, seed) for seed in range(3)]
    mask_src = build_model("mlp", 1.25, True, 7)
    global_magnitude_prune(mask_src, 0.9)
    masks = {k: v != 0 for k, v in state_of(mask_src).items() if k.endswith("weight")}
    states = []
    for m in models:
        s = state_of(m)
        states.append({k: v * masks[k] if k in masks else v for k, v in s.items()})
    avg = fedavg(states, [10, 20, 30])
    for key, mask in masks.items():
        assert torch.equal(avg[key] != 0, mask)
    expected = (
        states[0]["fc1.bias"] * 10 + states[1]["fc1.bias"] * 20 + states[2]["fc1.bias"] * 30
    ) / 60
    assert torch.allclose(avg["fc1.bias"], expected, atol=1e-7)


def test_regrowth_and_iou_on_hand_made_masks():
    prev = torch.tensor([1, 0, 0, 0, 1, 0, 0, 0], dtype=torch.bool)
    now = torch.tensor([1, 1, 0, 1, 0, 0, 0, 0], dtype=torch.bool)
    assert regrowth(prev, now) == pytest.approx(2 / 8)
    assert regrowth(now, now) == 0.0
    assert iou(prev, now) == pytest.approx(1 / 4)
    c = torch.tensor([1, 1, 0, 1, 0, 0, 0, 0], dtype=torch.bool)
    assert mean_pairwise_iou([prev, now, c]) == pytest.approx((1 / 4 + 1 / 4 + 1) / 3)
    assert iou(torch.zeros(3, dtype=torch.bool), torch.zeros(3, dtype=torch.bool)) == 1.0


def test_aggregation_regrowth_counts_what_fedavg_revives():
    """Two uploads at density 2/8 whose masks share one entry: the union has 3 non-zeros, so
    aggregation revives 1/8 beyond an upload; identical uploads revive nothing."""
    a = torch.tensor([1, 1, 0, 0, 0, 0, 0, 0], dtype=torch.bool)
    b = torch.tensor([1, 0, 1, 0, 0, 0, 0, 0], dtype=torch.bool)
    ua, ub = torch.where(a, 1.0, 0.0), torch.where(b, 2.0, 0.0)
    agg = fedavg([{"w": ua}, {"w": ub}], [1, 1])["w"] != 0
    assert aggregation_regrowth([a, b], agg) == pytest.approx(1 / 8)
    assert aggregation_regrowth([a, a], a) == 0.0
    assert regrowth(a, agg) == pytest.approx(1 / 8)  # a flip of the global mask too


def test_layer_densities_report_each_layer():
    model = build_model("mlp", 1.25, True, 0)
    global_magnitude_prune(model, 0.9)
    dens = layer_densities(model)
    assert set(dens) == {"fc1", "fc2", "fc3"}
    sizes = {"fc1": 64 * 256, "fc2": 256 * 256, "fc3": 256 * 10}
    total = sum(dens[k] * n for k, n in sizes.items()) / sum(sizes.values())
    assert total == pytest.approx(0.1, abs=1e-4)


def test_norm_layers_of_mlp_gn_are_never_pruned():
    model = build_model("mlp_gn", 1.25, True, 0)
    norms = {k: v.clone() for k, v in state_of(model).items() if k.startswith(("bn1", "bn2"))}
    assert norms and [n for n, _ in sparsy_layers(model)] == ["fc1", "fc2", "fc3"]
    global_magnitude_prune(model, 0.9)
    for key, value in norms.items():
        assert torch.equal(state_of(model)[key], value), key
    prunable = torch.cat([m.weight.detach().flatten() for _, m in sparsy_layers(model)])
    assert int((prunable == 0).sum()) == round(0.9 * prunable.numel())
