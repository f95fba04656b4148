# generated from tools/template/src/<package>/results.py by tools/sync.py; edit there, then run python3 tools/sync.py
"""Results in the meta-repo schema (CONVENTIONS.md section 6): atomic, readable files; claims
with the numbers their verdict rests on; the run's environment."""

from __future__ import annotations

import datetime
import io
import json
import math
import os
import platform
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

FILE_MODE = 0o644
# two-sided 97.5% Student-t quantiles by degrees of freedom (normal beyond the table)
T_975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
    10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
    18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980,
}  # fmt: skip
DIRECTIONS = (">", "<")
SEEDS_NEEDED_CAP = 100


# --- files -----------------------------------------------------------------------------------


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, then rename over `path` (mode 0644)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2) + "\n").encode())


def figure_png(fig: Any) -> bytes:
    """A matplotlib figure as PNG bytes (closed afterwards)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def save_figure(fig: Any, path: str | Path) -> None:
    """Save a matplotlib figure as PNG atomically."""
    atomic_write_bytes(path, figure_png(fig))


def read_json(path: str | Path, what: str = "file", kind: type | None = dict) -> Any:
    """Parse a JSON file; a missing or corrupt one, or one whose top level is not `kind` (an
    object by default; None: anything), is a ValueError naming it."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable {what} ({exc}); delete it and run again") from None
    if kind is not None and not isinstance(data, kind):
        raise ValueError(
            f"{path}: the {what} holds a {type(data).__name__}, expected a {kind.__name__}"
        )
    return data


def read_config(path: str | Path, cls: type, validate: Callable[[Any], Any]) -> Any:
    """The Config a run saved as JSON (lists back to tuples), validated; a missing, corrupt or
    invalid one (unknown fields, a value out of bounds) is a ValueError naming the file."""
    import dataclasses

    saved = read_json(path, "run configuration")
    names = {f.name for f in dataclasses.fields(cls)}
    if unknown := sorted(set(saved) - names):
        raise ValueError(f"{path}: unknown configuration fields {unknown}")

    def tuples(v: Any) -> Any:  # JSON lists back to the tuples a frozen Config holds
        return tuple(tuples(x) for x in v) if isinstance(v, list) else v

    values = {k: tuples(v) for k, v in saved.items()}
    try:
        return validate(cls(**values))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None


def _safetensors_flavour(framework: str) -> Any:
    """safetensors.torch where torch is installed (or asked for), else safetensors.numpy."""
    import importlib
    import importlib.util

    if framework == "auto":
        framework = "torch" if importlib.util.find_spec("torch") is not None else "numpy"
    if framework not in ("torch", "numpy"):
        raise ValueError(f"framework must be torch, numpy or auto, got {framework!r}")
    return importlib.import_module(f"safetensors.{framework}")


def save_safetensors(path: str | Path, tensors: dict[str, Any], framework: str = "auto") -> None:
    """Write tensors (torch tensors or numpy arrays) as a safetensors file, atomically (0644)."""
    flavour = _safetensors_flavour(framework)
    if flavour.__name__.endswith("torch"):
        tensors = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
    else:
        tensors = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
    atomic_write_bytes(path, flavour.save(tensors))


def load_safetensors(path: str | Path, framework: str = "auto") -> dict[str, Any]:
    """Tensors of a safetensors checkpoint (torch tensors where torch is installed, else numpy
    arrays); a missing or corrupt one is a ValueError naming it."""
    from safetensors import SafetensorError

    flavour = _safetensors_flavour(framework)
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such checkpoint")
    try:
        return flavour.load_file(str(path))
    except (SafetensorError, OSError, RuntimeError) as exc:
        raise ValueError(f"{path}: corrupt checkpoint ({exc}); delete it and run again") from None


def write_results(
    results_dir: str | Path, name: str, doc: dict[str, Any], figures: dict[str, Any] | None = None
) -> Path:
    """Write a run's figures (name -> matplotlib figure or PNG bytes) into results_dir/figures/,
    then its JSON last, every file atomically: a run killed earlier leaves the old set intact,
    and figures are never newer than the JSON beside them except for the instant between renames."""
    results_dir = Path(results_dir)
    rendered = {k: v if isinstance(v, bytes) else figure_png(v) for k, v in (figures or {}).items()}
    for fname, png in rendered.items():
        atomic_write_bytes(results_dir / "figures" / fname, png)
    path = results_dir / f"{name}.json"
    atomic_write_json(path, doc)
    return path


# --- statistics --------------------------------------------------------------------------------


def summarize(values: list[float]) -> dict[str, Any]:
    """Mean, standard deviation and the raw values of one metric over seeds."""
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "std": float(arr.std()), "values": [float(v) for v in arr]}


def t_quantile(df: int) -> float:
    """Two-sided 95% Student-t quantile (table lookup, the nearest smaller df; normal above)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    return T_975[max(k for k in T_975 if k <= df)] if df <= 120 else 1.96


def paired_interval(a: list[float], b: list[float]) -> dict[str, Any]:
    """Paired difference a - b over the same seeds: mean, n and a 95% t interval (None below 2)."""
    if len(a) != len(b) or not len(a):
        raise ValueError(f"paired values need equal, non-zero lengths; got {len(a)} and {len(b)}")
    d = np.asarray(a, float) - np.asarray(b, float)
    out: dict[str, Any] = {"mean": float(d.mean()), "values": [float(v) for v in d], "n": len(d)}
    if len(d) < 2:
        return {**out, "lo": None, "hi": None}
    half = t_quantile(len(d) - 1) * float(d.std(ddof=1)) / math.sqrt(len(d))
    return {**out, "lo": out["mean"] - half, "hi": out["mean"] + half}


# --- claims: structured tests and the three-way verdict ---------------------------------------


def part(
    what: str,
    estimate: float,
    interval: tuple[float | None, float | None] | list[float | None],
    threshold: float,
    direction: str,
    n: int,
    unit: str = "",
    method: str = "paired t over seeds",
    level: float = 0.95,
) -> dict[str, Any]:
    """One number a verdict rests on: the paper claims estimate `direction` threshold."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    lo, hi = interval
    return {
        "what": what,
        "estimate": float(estimate),
        "interval": [None if lo is None else float(lo), None if hi is None else float(hi)],
        "level": level,
        "method": method,
        "threshold": float(threshold),
        "direction": direction,
        "n": int(n),
        "unit": unit,
    }


def part_from_paired(
    what: str, diff: dict[str, Any], threshold: float, direction: str, unit: str = ""
) -> dict[str, Any]:
    """A part from paired_interval()'s output."""
    return part(what, diff["mean"], (diff["lo"], diff["hi"]), threshold, direction, diff["n"], unit)


def part_verdict(p: dict[str, Any]) -> str:
    """holds: the interval lies on the claimed side; contradicted: entirely on the other."""
    lo, hi = p["interval"]
    if lo is None or hi is None:
        return "inconclusive"
    t = p["threshold"]
    if p["direction"] == ">":
        return "holds" if lo > t else ("contradicted" if hi < t else "inconclusive")
    return "holds" if hi < t else ("contradicted" if lo > t else "inconclusive")


def verdict(parts: list[dict[str, Any]], min_n: int = 3) -> str:
    """Every part holds (on >= min_n units) -> holds; any contradicted -> contradicted."""
    each = [part_verdict(p) for p in parts]
    if "contradicted" in each:
        return "contradicted"
    if each and all(v == "holds" for v in each) and all(p["n"] >= min_n for p in parts):
        return "holds"
    return "inconclusive"


def seeds_needed(p: dict[str, Any], min_n: int = 3) -> int | None:
    """n * (half width / |estimate - threshold|)^2 for an undecided part, capped; None if decided.
    A part that holds on fewer than min_n units needs min_n."""
    decided = part_verdict(p)
    if decided == "holds" and p["n"] < min_n:
        return min_n
    if decided != "inconclusive":
        return None
    lo, hi = p["interval"]
    gap = abs(p["estimate"] - p["threshold"])
    if lo is None or hi is None or not math.isfinite(hi - lo) or not gap > 0:
        return SEEDS_NEEDED_CAP + 1  # no interval, a non-finite one (a NaN metric), or no gap
    need = math.ceil(p["n"] * ((hi - lo) / 2 / gap) ** 2)
    return min(max(need, p["n"] + 1), SEEDS_NEEDED_CAP + 1)


def claim(
    cid: str,
    statement: str,
    paper: str,
    ours: str,
    *,
    test: list[dict[str, Any]],
    **extra: Any,
) -> dict[str, Any]:
    """One claim: its verdict (and `holds`, kept for readers of the older form) follow from the
    numbers of `test` (parts from part()); an inconclusive one says how many seeds would decide."""
    if not test:
        raise ValueError(f"claim {cid}: give its test (parts from part())")
    out: dict[str, Any] = {"id": cid, "statement": statement, "paper": paper, "ours": ours}
    out["test"] = test
    out["verdict"] = verdict(test)
    needed = [s for s in map(seeds_needed, test) if s is not None]
    if out["verdict"] == "inconclusive" and needed:
        out["seeds_needed"] = max(needed)
    out["holds"] = out["verdict"] == "holds"
    return {**out, **extra}


def gate(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Read each claim under its precondition: a claim whose "precondition" names another claim
    of the same file that does not hold is inconclusive whatever its own numbers say (they stay in
    "test", their verdict in "verdict_of_numbers"), with "not_read" saying why and no
    seeds_needed (more seeds of an unreadable comparison decide nothing)."""
    by_id = {c["id"]: c for c in claims}
    done: dict[str, dict[str, Any]] = {}

    def read(cid: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
        if cid in done:
            return done[cid]
        if cid in seen:
            raise ValueError(f"claims {' -> '.join((*seen, cid))}: a circle of preconditions")
        c = by_id[cid]
        pid = c.get("precondition")
        if pid is not None:
            if pid not in by_id:
                raise ValueError(f"claim {cid}: its precondition {pid!r} is not a claim here")
            pre = read(pid, (*seen, cid))["verdict"]
            if pre != "holds":
                c = {k: v for k, v in c.items() if k != "seeds_needed"}
                c.update(
                    verdict_of_numbers=c["verdict"],
                    verdict="inconclusive",
                    holds=False,
                    not_read=f"precondition {pid} is {pre}",
                )
        done[cid] = c
        return c

    return [read(c["id"]) for c in claims]


# --- provenance -------------------------------------------------------------------------------


DIRTY = "+dirty"  # appended to git_commit when the package's source differed from that commit
_COMMIT_AT_START: list[str | None] = []


def _git(*args: str) -> str | None:
    """Stdout of a git command run in this package's folder (None outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", *args],
            check=False,
            capture_output=True,
            text=True,
            timeout=10,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_commit() -> str | None:
    """The commit the code was at when this process first asked: the CLI asks before any work
    starts, so a commit made during a long bench does not relabel its results. DIRTY is appended
    when this package's source had uncommitted changes then; tools/freshness.py reads such a
    results file as stale (it was not written by committed code)."""
    if not _COMMIT_AT_START:
        commit = _git("rev-parse", "--short", "HEAD")
        if commit and _git("status", "--porcelain", "--", "."):
            commit += DIRTY
        _COMMIT_AT_START.append(commit or None)
    return _COMMIT_AT_START[0]


def cpu_description() -> dict[str, Any]:
    """CPU model and the instruction-set flags that change float results (AVX2, AVX-512, FMA)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        pass
    wanted = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")
    return {"cpu": model, "cpu_flags": [f for f in wanted if f in flags], "cores": os.cpu_count()}


# settings that change float results from one machine or run to the next
NUMERICS_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "OMP_NUM_THREADS", "XLA_FLAGS")


def environment(device: str) -> dict[str, Any]:
    """Versions, CPU model and flags, and the numerics settings in force (torch's CPU code path
    when torch is loaded): seed-level numbers can differ between CPUs (AVX2 vs AVX-512)."""
    import sys

    env: dict[str, Any] = {"python": platform.python_version(), **cpu_description()}
    for mod in ("torch", "jax", "numpy"):
        try:
            env[mod] = __import__(mod).__version__
        except ImportError:
            env[mod] = None
    env["numerics"] = {k: os.environ.get(k) for k in NUMERICS_VARIABLES}
    if "torch" in sys.modules:
        env["numerics"]["torch_cpu_capability"] = sys.modules[
            "torch"
        ].backends.cpu.get_cpu_capability()
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
    **extra: Any,
) -> dict[str, Any]:
    """The results file's content; `wall_seconds` is this bench's own wall time. Claims are read
    under their preconditions (gate)."""
    doc = {
        "paper": paper,
        "mode": mode,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "environment": environment(device),
        "wall_seconds": round(float(wall_seconds), 2),
        "seeds": list(seeds),
        "metrics": metrics,
        "claims": gate(claims),
    }
    if performance:
        doc["performance"] = performance
    return {**doc, **extra}


# --- a bench split over seeds: partial files, one merge (tools/launch.py runs one job per seed) ---


def write_partial(
    path: str | Path,
    paper: str,
    mode: str,
    per_seed: dict[int, Any],
    wall_seconds: float,
    device: str,
) -> dict[str, Any]:
    """One job's share of a bench: the raw per-seed outputs, no claims (those need every seed)."""
    doc = {
        "paper": paper,
        "mode": mode,
        "partial": True,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "environment": environment(device),
        "wall_seconds": round(float(wall_seconds), 2),
        "per_seed": {str(seed): out for seed, out in per_seed.items()},
    }
    atomic_write_json(path, doc)
    return doc


def read_partials(paths: list[str], paper: str, mode: str) -> tuple[dict[int, Any], float]:
    """Per-seed outputs of several partial files of this paper and preset; every seed once."""
    per_seed: dict[int, Any] = {}
    wall = 0.0
    for path in paths:
        doc = read_json(path, "partial results file")
        if not isinstance(doc, dict) or not doc.get("partial"):
            raise ValueError(f"{path}: not a partial results file (bench --partial-out writes one)")
        if (doc.get("paper"), doc.get("mode")) != (paper, mode):
            raise ValueError(
                f"{path}: holds {doc.get('paper')!r} preset {doc.get('mode')!r}, "
                f"expected {paper!r} preset {mode!r}"
            )
        for seed, out in doc["per_seed"].items():
            if int(seed) in per_seed:
                raise ValueError(f"{path}: seed {seed} is also in an earlier partial file")
            per_seed[int(seed)] = out
        wall += float(doc.get("wall_seconds", 0.0))
    return dict(sorted(per_seed.items())), wall


def drive_bench(
    cfg: Any,
    paper: str,
    run_seed: Callable[[Any, int], Any],
    finish: Callable[[Any, dict[int, Any], float], dict[str, Any]],
    progress: Callable[..., Any] | None = None,
) -> dict[str, Any]:
    """Run a bench seed by seed: every seed then `finish` (claims, results file); with
    cfg.partial_out, only this job's seeds into a partial file; with cfg.merge, `finish` over the
    seeds of the partial files. `run_seed(cfg, seed)` returns JSON-able per-seed outputs."""
    if cfg.merge:
        per_seed, wall = read_partials(list(cfg.merge), paper, cfg.name)
        return finish(cfg, per_seed, wall)
    start = time.perf_counter()
    seeds = progress(cfg.seeds, "seeds", cfg.quiet) if progress else cfg.seeds
    per_seed = {int(seed): run_seed(cfg, int(seed)) for seed in seeds}
    wall = time.perf_counter() - start
    if cfg.partial_out:
        return write_partial(cfg.partial_out, paper, cfg.name, per_seed, wall, cfg.device)
    return finish(cfg, per_seed, wall)
