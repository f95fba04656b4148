"""The four federated methods, as settings of the same client (Section 4 of the paper).

| method        | beta       | activation pruning | local pruning to s | gradient mask        |
|---------------|------------|--------------------|--------------------|----------------------|
| dense         | 1          | no                 | no  (FedAvg)       | no                   |
| topk          | 1          | no                 | yes (Top-K)        | no                   |
| flash         | 1          | no                 | yes                | received mask (FLASH)|
| sparsyfed_na  | cfg.beta   | no                 | yes (ablation)     | no                   |
| sparsyfed     | cfg.beta   | yes                | yes (SparsyFed)    | no                   |
| sparsyfed_b1  | 1          | yes                | yes (control)      | no                   |

FLASH (Babakniya et al., 2023) as the official `fixed_train`: clients multiply the gradients by
the non-zero mask of the weights they receive, so the mask that the first round's pruning sets
never changes (no warm-up rounds, as the official runs: `warmup: 0`).

`sparsyfed_b1` is the negative control of the regrowth and Top-K claims: SparsyFed without its
Powerpropagation ingredient (beta = 1), activation pruning kept.
"""

from __future__ import annotations

import dataclasses

from .config import Config

LABELS = {
    "dense": "FedAvg (dense)",
    "topk": "Top-K",
    "flash": "FLASH (fixed mask)",
    "sparsyfed_na": "SparsyFed w/o act. pruning",
    "sparsyfed": "SparsyFed",
    "sparsyfed_b1": "SparsyFed beta=1 (control)",
}


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    beta: float
    """Powerpropagation exponent (1 = ordinary weights)."""
    act_prune: bool
    """Top-k activation pruning in the backward pass."""
    sparsity: float
    """Global magnitude pruning after local training (0 = none)."""
    fixed_mask: bool = False
    """Mask the gradients of the pruned weights with the received model's zeros (FLASH)."""


def method_spec(cfg: Config) -> MethodSpec:
    """How cfg.method sets the client: the baselines differ from SparsyFed only here."""
    if cfg.method == "dense":
        return MethodSpec(1.0, False, 0.0)
    if cfg.method == "topk":
        return MethodSpec(1.0, False, cfg.sparsity)
    if cfg.method == "flash":
        return MethodSpec(1.0, False, cfg.sparsity, fixed_mask=True)
    if cfg.method == "sparsyfed_na":
        return MethodSpec(cfg.beta, False, cfg.sparsity)
    if cfg.method == "sparsyfed":
        return MethodSpec(cfg.beta, True, cfg.sparsity)
    if cfg.method == "sparsyfed_b1":
        return MethodSpec(1.0, True, cfg.sparsity)
    raise ValueError(f"unknown method {cfg.method!r}; expected one of {tuple(LABELS)}")
