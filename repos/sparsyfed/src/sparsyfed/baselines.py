"""The four federated methods, as settings of the same client (Section 4 of the paper).

| method        | beta       | activation pruning | local pruning to s |
|---------------|------------|--------------------|--------------------|
| dense         | 1          | no                 | no  (FedAvg)       |
| topk          | 1          | no                 | yes (Top-K)        |
| sparsyfed_na  | cfg.beta   | no                 | yes (ablation)     |
| sparsyfed     | cfg.beta   | yes                | yes (SparsyFed)    |
"""

from __future__ import annotations

import dataclasses

from .config import Config

LABELS = {
    "dense": "FedAvg (dense)",
    "topk": "Top-K",
    "sparsyfed_na": "SparsyFed w/o act. pruning",
    "sparsyfed": "SparsyFed",
}


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    beta: float
    """Powerpropagation exponent (1 = ordinary weights)."""
    act_prune: bool
    """Top-k activation pruning in the backward pass."""
    sparsity: float
    """Global magnitude pruning after local training (0 = none)."""


def method_spec(cfg: Config) -> MethodSpec:
    """How cfg.method sets the client: the baselines differ from SparsyFed only here."""
    if cfg.method == "dense":
        return MethodSpec(1.0, False, 0.0)
    if cfg.method == "topk":
        return MethodSpec(1.0, False, cfg.sparsity)
    if cfg.method == "sparsyfed_na":
        return MethodSpec(cfg.beta, False, cfg.sparsity)
    if cfg.method == "sparsyfed":
        return MethodSpec(cfg.beta, True, cfg.sparsity)
    raise ValueError(f"unknown method {cfg.method!r}; expected one of {tuple(LABELS)}")
