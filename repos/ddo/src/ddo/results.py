"""Results in the meta-repo schema (CONVENTIONS.md section 6), written atomically."""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, then rename over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode())


def save_figure(fig: Any, path: str | Path) -> None:
    """Save a matplotlib figure as PNG atomically."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    atomic_write_bytes(path, buf.getvalue())


def summarize(values: list[float]) -> dict[str, Any]:
    """Mean, standard deviation and the raw values of one metric over seeds."""
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "std": float(arr.std()), "values": [float(v) for v in arr]}


# two-sided 95% Student-t quantiles by degrees of freedom (1.96 beyond the table)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}  # fmt: skip


def t_interval(values: list[float]) -> dict[str, float]:
    """Mean and 95% t interval over seeds (a paired difference when `values` are differences).

    One value gives no interval (low = high = None), so no claim can rest on a single seed.
    """
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if arr.size < 2:
        return {"mean": mean, "low": None, "high": None, "n": int(arr.size)}
    df = arr.size - 1
    q = T975[max(k for k in T975 if k <= df)] if df <= 30 else 1.96
    half = q * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": int(arr.size)}


def below(iv: dict[str, float], threshold: float) -> bool:
    """The whole interval lies below `threshold` (False without an interval)."""
    return iv["high"] is not None and iv["high"] < threshold


def above(iv: dict[str, float], threshold: float) -> bool:
    """The whole interval lies above `threshold` (False without an interval)."""
    return iv["low"] is not None and iv["low"] > threshold


def fmt_interval(iv: dict[str, float], digits: int = 3) -> str:
    if iv["low"] is None:
        return f"{iv['mean']:.{digits}f} [no interval: one seed]"
    return f"{iv['mean']:.{digits}f} [{iv['low']:.{digits}f}, {iv['high']:.{digits}f}]"


def claim(
    cid: str, statement: str, paper: str, ours: str, holds: bool, **extra: Any
) -> dict[str, Any]:
    """One claim; `holds` must come from a comparison of measured metrics. `extra` carries the
    intervals and the negative control (the same check applied to a row that must fail it)."""
    return {
        "id": cid, "statement": statement, "paper": paper, "ours": ours, "holds": bool(holds),
        **extra,
    }  # fmt: skip


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            check=False,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def environment(device: str) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
    }
    for mod in ("torch", "jax", "numpy"):
        try:
            env[mod] = __import__(mod).__version__
        except ImportError:
            env[mod] = None
    env["device"] = device
    return env


def results_document(
    paper: str,
    mode: str,
    seeds: list[int],
    metrics: dict[str, dict[str, Any]],
    claims: list[dict[str, Any]],
    wall_seconds: float,
    device: str,
    performance: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    doc = {
        "paper": paper,
        "mode": mode,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "environment": environment(device),
        "wall_seconds": round(float(wall_seconds), 2),
        "seeds": list(seeds),
        "metrics": metrics,
        "claims": claims,
    }
    if performance:
        doc["performance"] = performance
    doc.update(extra or {})
    return doc
