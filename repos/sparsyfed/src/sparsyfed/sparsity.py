"""Global magnitude pruning and the mask statistics of Section 4 (regrowth, consensus, density).

Pruning is global L1 over the stored omega of every conv/linear layer, as the official client
does with `torch.nn.utils.prune.global_unstructured` after local training; biases and norm
layers are never pruned. We select the same entries as that library call (bottom-k of |omega|,
k = round(s * n)) without its hook machinery, which was most of a round's time; a test checks
that the two agree entry for entry.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn
from torch.nn.utils import prune

from .powerprop import sparsy_layers


def check_sparsity(sparsity: float) -> None:
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")


def global_magnitude_prune(model: nn.Module, sparsity: float) -> None:
    """Zero the `sparsity` fraction of smallest |omega| across all prunable layers, in place."""
    check_sparsity(sparsity)
    if sparsity == 0.0:
        return
    weights = [m.weight for _, m in sparsy_layers(model)]
    flat = torch.cat([w.detach().abs().reshape(-1) for w in weights])
    n_prune = round(sparsity * flat.numel())  # torch.nn.utils.prune's rounding of `amount`
    if n_prune == 0:
        return
    keep = torch.ones_like(flat, dtype=torch.bool)
    keep[torch.topk(flat, n_prune, largest=False).indices] = False
    with torch.no_grad():
        for w, m in zip(weights, keep.split([w.numel() for w in weights]), strict=True):
            w.mul_(m.view_as(w))


def library_global_prune(model: nn.Module, sparsity: float) -> None:
    """The reference: torch.nn.utils.prune.global_unstructured + remove (official client)."""
    params = [(m, "weight") for _, m in sparsy_layers(model)]
    prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=sparsity)
    for module, name in params:
        prune.remove(module, name)


def prunable_masks(state: dict[str, torch.Tensor], names: list[str]) -> torch.Tensor:
    """Flat boolean non-zero mask over the prunable weights named in `names`."""
    return torch.cat([state[n].reshape(-1) != 0 for n in names])


def regrowth(prev_mask: torch.Tensor, mask: torch.Tensor) -> float:
    """|{k: w_{t-1}[k] = 0 and w_t[k] != 0}| / |w|: global-mask flips from zero to non-zero.

    Under Powerpropagation this is 0 by construction (a zero omega gets zero gradient and FedAvg
    of zeros is zero), so it is reported, never claimed; see `aggregation_regrowth`.
    """
    return float((~prev_mask & mask).sum()) / mask.numel()


def aggregation_regrowth(uploads: list[torch.Tensor], aggregate: torch.Tensor) -> float:
    """Per-round weight regrowth as the paper measures it (Sec. 5.3, Fig. 6 right): the density
    of the aggregate minus the mean density of the uploads it was made from.

    Each client uploads a model at the target density; FedAvg's non-zeros are the union of the
    upload masks, so every weight that one client kept and another pruned comes back in the
    global model. 0 iff all clients upload the same mask; grows as their masks disagree.
    """
    upload_density = float(torch.stack(uploads).float().mean())
    return float(aggregate.float().mean()) - upload_density


def iou(a: torch.Tensor, b: torch.Tensor) -> float:
    """Intersection over union of two non-zero masks (1.0 when both are empty)."""
    union = float((a | b).sum())
    return 1.0 if union == 0 else float((a & b).sum()) / union


def mean_pairwise_iou(masks: list[torch.Tensor]) -> float:
    """Mean IoU over all client pairs: the consensus of the masks uploaded in one round."""
    pairs = list(itertools.combinations(masks, 2))
    if not pairs:
        return 1.0
    return sum(iou(a, b) for a, b in pairs) / len(pairs)


def layer_densities(model: nn.Module) -> dict[str, float]:
    """Fraction of non-zeros in each prunable layer's omega (layer-collapse check)."""
    return {n: float((m.weight != 0).float().mean()) for n, m in sparsy_layers(model)}


def count_nonzeros(state: dict[str, torch.Tensor]) -> int:
    """Non-zero entries a client uploads (weights, biases and norm parameters)."""
    return int(sum(int((v != 0).sum()) for v in state.values() if v.is_floating_point()))
