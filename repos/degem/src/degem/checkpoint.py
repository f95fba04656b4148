"""What `train` saves and `eval` loads: the trained models of one run, as the tensors of one
safetensors file (results.save_safetensors / load_safetensors).

A run trains two settings on the same graph ('first': every node class in distribution, scored
on the structure and feature shifts; 'label': the ood_classes held out). Each setting's models are
stored under '<setting>/<model>/<parameter>': DeGEM (encoder, energy head with its batch-norm
statistics, classifier, readout c), the Gaussian fitted to its training embeddings, and the GCN
and feature-only MLP (absent in a DeGEM-only ablation run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .baselines import GCN
from .config import Config
from .degem import DeGEM

SETTINGS = ("first", "label")


def tensors_of(first: dict, label: dict) -> dict[str, torch.Tensor]:
    """The trained models of both settings (degem, gauss, gcn, mlp), '<setting>/<model>/<name>'."""
    tensors: dict[str, torch.Tensor] = {}
    for name, trained in zip(SETTINGS, (first, label)):
        for part in ("degem", "gcn", "mlp"):
            if trained[part] is not None:
                for key, value in trained[part].state_dict().items():
                    tensors[f"{name}/{part}/{key}"] = value.detach().cpu().contiguous()
        mean, precision = trained["gauss"]
        tensors[f"{name}/gauss/mean"] = mean.detach().cpu().contiguous()
        tensors[f"{name}/gauss/precision"] = precision.detach().cpu().contiguous()
    return tensors


def _part(tensors: dict, prefix: str, device) -> dict[str, torch.Tensor]:
    return {k[len(prefix) :]: v.to(device) for k, v in tensors.items() if k.startswith(prefix)}


def load(
    tensors: dict, name: str, cfg: Config, in_dim: int, n_classes: int, path: Path
) -> dict[str, Any]:
    """One setting's trained models from to_bytes' tensors, in eval mode on cfg.device; a
    file that does not fit the run's config is a ValueError naming it."""
    device = torch.device(cfg.device)
    try:
        degem = DeGEM(in_dim, n_classes, cfg).to(device)
        degem.load_state_dict(_part(tensors, f"{name}/degem/", device))
        nets: dict[str, GCN | None] = {}
        for part in ("gcn", "mlp"):
            state = _part(tensors, f"{name}/{part}/", device)
            nets[part] = None
            if state:
                nets[part] = GCN(in_dim, cfg.gcn_hidden, n_classes, cfg.dropout).to(device)
                nets[part].load_state_dict(state)
                nets[part].eval()
        gauss = (tensors[f"{name}/gauss/mean"].to(device), tensors[f"{name}/gauss/precision"])
    except (RuntimeError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{path}: does not hold this run's models ({first})") from None
    return {"degem": degem.eval(), "gauss": (gauss[0], gauss[1].to(device)), **nets}
