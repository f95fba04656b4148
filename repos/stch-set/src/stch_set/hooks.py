"""What each command of the generated cli.py runs: this project's wiring."""

from __future__ import annotations

from .commands import standard

SPLITS_BY_SEED = True
"""bench.run_bench runs through results.drive_bench (--partial-out / --merge)."""

COMMANDS = standard(
    train="train --method on --problem with one seed; write its solutions and metrics to --out",
    eval="load the solutions saved in --out and evaluate them on their problem again",
    bench_writes=("results_dir",),  # the bench keeps its runs in memory, never in --out
)
