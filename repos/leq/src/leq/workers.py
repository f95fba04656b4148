"""Worker processes for the benchmark's independent runs (one run = task, method, seed).

The processes are started with "spawn", never "fork": forking a process that has initialised
JAX can deadlock. Each worker sets single-threaded XLA flags before it imports jax (this module
imports no jax at the top, so unpickling `_init` in a fresh worker does not load it early), so
`workers` processes use `workers` cores. The workers of one benchmark share a scratch folder
that holds XLA's persistent compilation cache (a function one worker has compiled is loaded by
the other, not compiled again) and the datasets and world models of each seed
(`train.share_folder`); a JAX_COMPILATION_CACHE_DIR set by the user replaces the first.
A run's numbers do not depend on the process that ran it (tested:
serial and 2 workers give equal metrics).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def _init(folder: str) -> None:
    """Worker start-up: one XLA / OpenMP thread, then the shared caches."""
    os.environ["XLA_FLAGS"] = SINGLE_THREAD_XLA
    os.environ["OMP_NUM_THREADS"] = "1"
    import jax

    if not os.environ.get("JAX_COMPILATION_CACHE_DIR"):  # else the user's own persistent cache
        jax.config.update("jax_compilation_cache_dir", str(Path(folder) / "xla"))
    from . import train

    train.share_folder(folder)


def run_all(
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    workers: int,
    folder: str | Path,
    on_done: Callable[[Any, Any], None] | None = None,
) -> list[Any]:
    """[fn(item) for item in items] on `workers` spawned processes, results in `items` order.

    Workers take items in the given order as they become free. `on_done(item, result)` runs in
    this process as each result arrives (progress). With workers == 1 everything runs here.
    """
    if workers == 1:
        results = []
        for item in items:
            results.append(fn(item))
            if on_done:
                on_done(item, results[-1])
        return results
    out: list[Any] = [None] * len(items)
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=(str(folder),))
    try:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        for fut in as_completed(futures):
            i = futures[fut]
            out[i] = fut.result()  # a failed run raises here, in this process
            if on_done:
                on_done(items[i], out[i])
    finally:  # on an error, drop the runs not started instead of finishing them first
        pool.shutdown(wait=True, cancel_futures=True)
    return out
