"""Command line: `leq {train,eval,bench} [--preset quick|paper|full] [--FIELD VALUE ...]`.

Thin on purpose: flags become a Config (every field is a flag), then the library is called.
Misuse (unknown command, bad preset, bad value) prints one line to stderr and exits 2.
"""

from __future__ import annotations

import json
import os
import sys

import tyro

from .config import PRESETS, Config, validate

COMMANDS = {
    "train": "train --method on --env with one seed and write metrics to --out",
    "eval": "print the metrics of a finished run in --out",
    "bench": "run every method over --seeds, write results/<preset>.json and figures",
}
USAGE = (
    "usage: leq {train,eval,bench} [--preset quick|paper|full] [--FIELD VALUE ...]\n\n"
    + "\n".join(f"  {name:6s} {text}" for name, text in COMMANDS.items())
    + "\n\n`leq COMMAND --help` lists every flag with its meaning and preset default."
)


def parse(command: str, argv: list[str]) -> Config:
    """Split off --preset, then let tyro turn the remaining flags into a Config."""
    preset, rest, i = "quick", [], 0
    while i < len(argv):
        if argv[i] == "--preset":
            if i + 1 >= len(argv):
                raise ValueError("--preset needs a value: quick, paper or full")
            preset, i = argv[i + 1], i + 2
            continue
        if argv[i].startswith("--preset="):
            preset = argv[i].split("=", 1)[1]
        else:
            rest.append(argv[i])
        i += 1
    if preset not in PRESETS:
        raise ValueError(f"--preset must be one of {sorted(PRESETS)}, got {preset!r}")
    cfg = tyro.cli(
        Config,
        default=PRESETS[preset],
        args=rest,
        prog=f"leq {command}",
        description=f"{COMMANDS[command]}. --preset quick|paper|full sets the defaults ({preset}).",
    )
    return validate(cfg)


def configure_jax(cfg: Config) -> None:
    """Thread count and platform must be set before jax is first imported."""
    if "jax" not in sys.modules:
        os.environ.setdefault(
            "XLA_FLAGS",
            f"--xla_cpu_multi_thread_eigen={'true' if cfg.threads > 1 else 'false'} "
            f"intra_op_parallelism_threads={cfg.threads}",
        )
        os.environ.setdefault("JAX_PLATFORMS", "cpu" if cfg.device == "cpu" else "")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(
            f"error: unknown command {command!r}; expected one of {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    try:
        cfg = parse(command, rest)
        configure_jax(cfg)
        if command == "train":
            from .train import train_and_evaluate

            result = train_and_evaluate(cfg, cfg.out)
        elif command == "eval":
            from .train import evaluate

            result = evaluate(cfg.out)
        else:
            from .bench import run_bench

            result = {c["id"]: c["holds"] for c in run_bench(cfg)["claims"]}
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
