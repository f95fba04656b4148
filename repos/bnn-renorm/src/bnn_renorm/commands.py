# generated from tools/template/src/<package>/commands.py by tools/sync.py; edit there, then run python3 tools/sync.py
"""The standard commands (train, eval, bench) and a one-line argparse for a project's own commands.

hooks.py (the project's) builds its COMMANDS from these: `COMMANDS = standard(train="...",
eval="...")`, then adds or replaces entries for what the project does differently.
"""

from __future__ import annotations

import argparse
from typing import Any

from .runtime import Command, results_dir_of

BENCH_HELP = "run every method over --seeds and write <results-dir>/<preset>.json and figures"


def run_train(cfg: Any) -> Any:
    from .train import train_and_evaluate

    return train_and_evaluate(cfg, cfg.out)


def run_eval(cfg: Any) -> Any:
    from .train import evaluate

    return evaluate(cfg, cfg.out)


def run_bench(cfg: Any) -> dict[str, Any]:
    """The bench; prints where the results went and each claim's verdict."""
    from .bench import run_bench as bench

    doc = bench(cfg)
    if doc.get("partial"):
        return {"partial": cfg.partial_out, "seeds": sorted(map(int, doc["per_seed"]))}
    return {
        "results": str(results_dir_of(cfg) / f"{cfg.name}.json"),
        "claims": {c["id"]: c.get("verdict", c["holds"]) for c in doc["claims"]},
    }


def standard(
    train: str,
    eval: str,
    bench: str = BENCH_HELP,
    bench_writes: tuple[str, ...] = ("out", "results_dir"),
    train_preset: str = "quick",
) -> dict[str, Command]:
    """train -> train.train_and_evaluate(cfg, cfg.out); eval -> train.evaluate(cfg, cfg.out), which
    loads what train saved; bench -> bench.run_bench(cfg). The strings are the help lines;
    `train_preset` is train's and eval's preset when --preset is not given."""
    return {
        "train": Command(train, run_train, ("out",), preset=train_preset),
        "eval": Command(eval, run_eval, reads="out", preset=train_preset),
        "bench": Command(bench, run_bench, bench_writes),
    }


class OneLineParser(argparse.ArgumentParser):
    """argparse for a raw command: misuse is a ValueError (one line from the CLI, exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValueError(f"{self.prog}: {message}")
