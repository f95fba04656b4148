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


def paired_interval(a, b, level: float = 0.95) -> dict[str, Any]:
    """Mean of the paired differences a - b over the same seeds, with a Student-t interval.

    With one pair the interval is unknown (None): a claim that needs it then does not hold.
    """
    from scipy import stats

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    out: dict[str, Any] = {"mean": float(d.mean()), "values": [float(v) for v in d], "n": len(d)}
    if len(d) < 2:
        return {**out, "lo": None, "hi": None}
    half = float(stats.t.ppf(0.5 + level / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
    return {**out, "lo": out["mean"] - half, "hi": out["mean"] + half}


def fmt_interval(d: dict[str, Any]) -> str:
    """'+3.2 [95% CI -1.0, +7.4]' (or without the interval when it is unknown)."""
    if d["lo"] is None:
        return f"{d['mean']:+.2f} (one seed, no interval)"
    return f"{d['mean']:+.2f} [95% CI {d['lo']:+.2f}, {d['hi']:+.2f}]"


def claim(cid: str, statement: str, paper: str, ours: str, holds: bool, **extra) -> dict[str, Any]:
    """One claim; `holds` must come from a comparison of measured metrics."""
    out = {"id": cid, "statement": statement, "paper": paper, "ours": ours, "holds": bool(holds)}
    return {**out, **extra}


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
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
    for key in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "OMP_NUM_THREADS"):
        env[key] = os.environ.get(key)
    try:
        import torch

        env["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    except ImportError:
        env["cpu_capability"] = None
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
