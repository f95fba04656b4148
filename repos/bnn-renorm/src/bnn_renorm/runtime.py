# generated from tools/template/src/<package>/runtime.py by tools/sync.py; edit there, then run python3 tools/sync.py
"""The run plumbing every command shares: common config fields, bounds, devices, output paths,
progress. The paper's own code never needs to edit this file (hooks.py is the project's)."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import sys
import time
import typing
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

from annotated_types import Ge, Gt, Interval, Le, Lt, MinLen

__all__ = [
    "Annotated",
    "Command",
    "Ge",
    "Gt",
    "Interval",
    "Le",
    "Lt",
    "MinLen",
    "RunConfig",
    "bounds_of",
    "check_bounds",
    "check_readable_run",
    "check_writable_dir",
    "limit_threads",
    "progress",
    "resolve_device",
    "results_dir_of",
    "stage",
]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Fields every paper's Config has; a project's Config subclasses this."""

    name: str = "quick"
    """Preset name; the benchmark writes <results-dir>/<name>.json."""
    seed: Annotated[int, Ge(0)] = 0
    """Random seed of one run (data, initialisation, sampling)."""
    seeds: Annotated[tuple[int, ...], MinLen(1), Ge(0)] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """cpu, cuda, cuda:N, or auto (cuda when this machine has it, else cpu)."""
    out: str = "runs/quick"
    """Folder of one run: config.json, metrics.json, checkpoints, figures."""
    results_dir: str = ""
    """Folder the benchmark writes <name>.json and figures/ into; empty: runs/<name>. The committed
    results/ is written only when asked for (--results-dir results, as the nox sessions do)."""
    threads: Annotated[int, Ge(1)] = 1
    """CPU threads of torch and of the BLAS/OpenMP pools numpy and scipy load. One is fastest on
    a shared machine: an oversubscribed OpenBLAS pool spins on every small call (measured in
    oft-sinkhorn: 71 s against 13 s for one L-BFGS solve)."""
    quiet: bool = False
    """No progress output (bars on a terminal, one line per stage otherwise)."""
    partial_out: str = ""
    """bench: run only --seeds and write their raw outputs to this file, no claims (one job of a
    bench spread over machines; tools/launch.py)."""
    merge: tuple[str, ...] = ()
    """bench: compute the claims and the results file from these partial files instead of running."""


@dataclasses.dataclass(frozen=True)
class Command:
    """One subcommand: its help line, what it runs, and which paths it writes or reads.

    `run` takes the parsed Config, or the raw argument list when `raw` is true (a command with
    its own flags, e.g. a file converter). Paths named in `writes` are checked to be writable and
    the one in `reads` to hold a run, all before any work starts."""

    help: str
    run: Callable[[Any], Any]
    writes: tuple[str, ...] = ()
    reads: str = ""
    raw: bool = False
    preset: str = "quick"
    """The preset used when --preset is not given."""


def results_dir_of(cfg: Any) -> Path:
    """Where the benchmark writes: --results-dir, else runs/<preset name>."""
    return Path(cfg.results_dir or f"runs/{cfg.name}")


# --- bounds written beside the fields: Annotated[int, Ge(1)] --------------------------------


def bounds_of(cls: type) -> dict[str, list[Any]]:
    """Field name -> the annotated_types constraints declared on it (Ge, Gt, Le, Lt, Interval, MinLen)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out: dict[str, list[Any]] = {}
    for field in dataclasses.fields(cls):
        meta = getattr(hints.get(field.name), "__metadata__", ())
        found = [m for m in meta if isinstance(m, (Ge, Gt, Le, Lt, Interval, MinLen))]
        if found:
            out[field.name] = found
    return out


def _interval_text(c: Interval) -> str:
    lo = f"[{c.ge}" if c.ge is not None else (f"({c.gt}" if c.gt is not None else "(-inf")
    hi = f"{c.le}]" if c.le is not None else (f"{c.lt})" if c.lt is not None else "inf)")
    return f"must lie in {lo}, {hi}"


def _violation(value: Any, c: Any) -> str | None:
    if value is None:  # an optional field left at "the preset decides"
        return None
    if isinstance(c, MinLen):
        return None if len(value) >= c.min_length else f"needs at least {c.min_length} value(s)"
    if isinstance(value, tuple):  # an elementwise bound on a tuple of numbers
        bad = [v for v in value if _violation(v, c)]
        return f"{_violation(bad[0], c)} for every entry" if bad else None
    if isinstance(value, float) and math.isnan(value):
        return "must be a number (got nan)"
    if isinstance(c, Interval):
        ok = all(
            (b is None) or test(value, b)
            for b, test in (
                (c.ge, lambda v, b: v >= b),
                (c.gt, lambda v, b: v > b),
                (c.le, lambda v, b: v <= b),
                (c.lt, lambda v, b: v < b),
            )
        )
        return None if ok else _interval_text(c)
    for kind, attr, symbol, test in (
        (Ge, "ge", ">=", lambda v, b: v >= b),
        (Gt, "gt", ">", lambda v, b: v > b),
        (Le, "le", "<=", lambda v, b: v <= b),
        (Lt, "lt", "<", lambda v, b: v < b),
    ):
        if isinstance(c, kind):
            bound = getattr(c, attr)
            return None if test(value, bound) else f"must be {symbol} {bound}"
    return None


def check_bounds(cfg: Any) -> None:
    """Raise ValueError naming the field, the bound and the value of the first violated bound."""
    for name, constraints in bounds_of(type(cfg)).items():
        value = getattr(cfg, name)
        for c in constraints:
            problem = _violation(value, c)
            if problem:
                raise ValueError(f"{name} {problem}, got {value!r}")


# --- devices ---------------------------------------------------------------------------------


def _cuda_devices() -> tuple[int, str]:
    """(number of CUDA devices, which library was asked): torch first, else jax."""
    if importlib.util.find_spec("torch") is not None:
        import torch

        return (torch.cuda.device_count() if torch.cuda.is_available() else 0), "torch"
    if importlib.util.find_spec("jax") is not None:
        import jax

        try:
            return len(jax.devices("gpu")), "jax"
        except RuntimeError:
            return 0, "jax"
    return 0, "no torch or jax"


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def limit_threads(threads: int) -> None:
    """Hold the math libraries to `threads` CPU threads.

    numpy is imported before any config is read, so an environment variable alone comes too late
    for the BLAS it has loaded: threadpoolctl limits the loaded pools, the variables reach the
    libraries loaded later (scipy's own OpenBLAS) and child processes, and torch is told directly
    when it is already loaded."""
    for var in THREAD_VARIABLES:
        os.environ[var] = str(threads)
    if importlib.util.find_spec("threadpoolctl") is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' where a CUDA device exists, else 'cpu'; 'cuda[:N]' must exist."""
    if device == "cpu":
        return device
    if device != "auto" and not (device == "cuda" or device.startswith("cuda:")):
        raise ValueError(f"--device must be cpu, cuda, cuda:N or auto, got {device!r}")
    count, lib = _cuda_devices()
    if device == "auto":
        return "cuda" if count else "cpu"
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    if index >= count:
        have = f"{count} CUDA device(s)" if count else "no CUDA device"
        raise ValueError(
            f"--device {device}: this machine has {have} ({lib}); use --device cpu or auto"
        )
    return device


# --- output and input paths, checked before any work ---------------------------------------


def check_writable_dir(path: str | Path, flag: str) -> None:
    """Raise ValueError when `path` cannot become a writable folder (a file, under a file, no
    permission). Creates nothing: the first existing ancestor is probed instead."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{flag} {path}: is a file, expected a folder")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ValueError(f"{flag} {path}: {probe} is a file, so the folder cannot be made")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: {probe} is not writable")


def check_readable_run(path: str | Path, flag: str = "--out") -> None:
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"{flag} {path}: no such run folder; run `train --out {path}` first")


# --- progress: bars on a terminal, a line per stage with elapsed time otherwise -------------

_START = time.monotonic()


def _tty() -> bool:
    return sys.stderr.isatty()


def stage(message: str, quiet: bool = False) -> None:
    """One line to stderr with the elapsed time since the process started."""
    if not quiet:
        print(f"[{time.monotonic() - _START:7.1f}s] {message}", file=sys.stderr, flush=True)


def progress(
    items: Iterable[T],
    desc: str,
    quiet: bool = False,
    total: int | None = None,
    postfix: Callable[[], str] | None = None,
) -> Iterator[T]:
    """tqdm on a terminal; otherwise a line at about every 10% with elapsed time and an ETA.
    `postfix()` (e.g. the live loss) is shown after each item on the bar, and in each line."""
    if quiet:
        yield from items
        return
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    if _tty():
        from tqdm import tqdm

        bar = tqdm(items, desc=desc, total=total, leave=False)
        for item in bar:
            yield item
            if postfix is not None:
                bar.set_postfix_str(postfix())
        return
    start, step = time.monotonic(), max(1, (total or 10) // 10)
    for i, item in enumerate(items, 1):
        yield item
        if total and (i % step == 0 or i == total):
            spent = time.monotonic() - start
            eta = spent / i * (total - i)
            note = f", {postfix()}" if postfix is not None else ""
            stage(f"{desc}: {i}/{total}, {spent:.0f}s spent, about {eta:.0f}s left{note}")
