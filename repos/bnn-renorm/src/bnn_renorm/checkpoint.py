"""The sublinear experiment's networks as one safetensors file (numpy tensors: no torch here).

Keys are "n<width>/<trained|untrained>/<restart>/<a|w>"; `load_networks` checks them against the
run's widths and restarts, and any damage is a ValueError that names the file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .results import load_safetensors, save_safetensors

KINDS = ("trained", "untrained")
Networks = dict[int, tuple[list[dict], list[dict]]]  # width -> (trained, untrained) networks


def save_networks(path: str | Path, nets: Networks) -> None:
    save_safetensors(
        path,
        {
            f"n{width}/{kind}/{i}/{name}": np.asarray(value)
            for width, pair in nets.items()
            for kind, group in zip(KINDS, pair, strict=True)
            for i, params in enumerate(group)
            for name, value in params.items()
        },
        framework="numpy",
    )


def load_networks(path: str | Path, widths: tuple[int, ...], restarts: int) -> Networks:
    """The networks `save_networks` wrote, checked against the run's widths and restarts."""
    tensors = load_safetensors(path, framework="numpy")
    out = {}
    for width in widths:
        pair = []
        for kind in KINDS:
            group = []
            for i in range(restarts):
                params = {}
                for name in ("a", "w"):
                    value = tensors.get(f"n{width}/{kind}/{i}/{name}")
                    if value is None or value.shape[:1] != (width,) or not np.isfinite(value).all():
                        raise ValueError(
                            f"{path}: no finite width-{width} tensor n{width}/{kind}/{i}/{name}; "
                            "run `train` again"
                        )
                    params[name] = value
                group.append(params)
            pair.append(group)
        out[width] = (pair[0], pair[1])
    return out
