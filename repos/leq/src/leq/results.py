"""Results in the meta-repo schema (CONVENTIONS.md section 6), written atomically."""

from __future__ import annotations

import datetime
import json
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


T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def paired_interval(a: list[float], b: list[float]) -> dict[str, Any]:
    """Paired difference a - b over the same seeds: mean and 95 % t interval (None below 2 seeds)."""
    if len(a) != len(b) or not a:
        raise ValueError(f"paired values need equal, non-zero lengths; got {len(a)} and {len(b)}")
    d = np.asarray(a, float) - np.asarray(b, float)
    out: dict[str, Any] = {"mean": float(d.mean()), "values": [float(v) for v in d]}
    if len(d) < 2:
        return {**out, "lo": None, "hi": None}
    half = T_975.get(len(d) - 1, 1.96) * d.std(ddof=1) / np.sqrt(len(d))
    return {**out, "lo": float(d.mean() - half), "hi": float(d.mean() + half)}


def claim(
    cid: str, statement: str, paper: str, ours: str, holds: bool, reason: str = ""
) -> dict[str, Any]:
    """One claim; `holds` must come from a comparison of measured metrics. `reason` says why a
    claim does not hold when that is not the threshold itself (e.g. "no signal")."""
    out = {"id": cid, "statement": statement, "paper": paper, "ours": ours, "holds": bool(holds)}
    if reason:
        out["reason"] = reason
    return out


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
    return doc
