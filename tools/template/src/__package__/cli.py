"""Command line: `__cli__ COMMAND [--preset NAME] [--FIELD VALUE ...]`.

Thin on purpose: flags become a Config (every field is a flag), the device and output paths are
checked, then the command that hooks.py names runs. Misuse (unknown command, bad preset or value,
missing CUDA, an output path that cannot be written, a corrupt file) prints one line to stderr and
exits 2, before any work starts where it can be known then.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import sys
from pathlib import Path
from typing import Any

import tyro

from . import hooks, results
from .config import PRESETS, Config, validate
from .runtime import (
    check_readable_run,
    check_writable_dir,
    limit_threads,
    resolve_device,
    results_dir_of,
)

PROG = "__cli__"


def usage() -> str:
    rows = "\n".join(f"  {name:9s} {cmd.help}" for name, cmd in hooks.COMMANDS.items())
    return (
        f"usage: {PROG} {{{','.join(hooks.COMMANDS)}}} [--preset {'|'.join(PRESETS)}] "
        f"[--FIELD VALUE ...]\n\n{rows}\n\n"
        f"`{PROG} COMMAND --help` lists every flag with its meaning and preset default."
    )


def split_preset(argv: list[str], default: str = "quick") -> tuple[str, list[str]]:
    """(--preset value, the other arguments); `default` when --preset is not given."""
    preset, rest, i = default, [], 0
    while i < len(argv):
        if argv[i] == "--preset":
            if i + 1 >= len(argv):
                raise ValueError(f"--preset needs a value: one of {sorted(PRESETS)}")
            preset, i = argv[i + 1], i + 2
            continue
        if argv[i].startswith("--preset="):
            preset = argv[i].split("=", 1)[1]
        else:
            rest.append(argv[i])
        i += 1
    if preset not in PRESETS:
        raise ValueError(f"--preset must be one of {sorted(PRESETS)}, got {preset!r}")
    return preset, rest


def first_message(boxed: str) -> str:
    """The first paragraph of tyro's boxed error, as one line."""
    lines: list[str] = []
    for raw in boxed.splitlines()[1:]:
        text = raw.strip().strip("│").strip()
        if text.startswith(("─", "╰")) or (lines and not text):
            break
        if text:
            lines.append(text)
    return " ".join(lines) or "could not parse the command line"


def parse(command: str, argv: list[str]) -> Config:
    """Split off --preset, let tyro turn the remaining flags into a Config, validate it."""
    preset, rest = split_preset(argv, hooks.COMMANDS[command].preset)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            cfg = tyro.cli(
                Config,
                default=PRESETS[preset],
                args=rest,
                prog=f"{PROG} {command}",
                description=f"{hooks.COMMANDS[command].help}. --preset {'|'.join(PRESETS)} "
                f"picks the defaults (now: {preset}).",
            )
    except SystemExit as exc:
        if exc.code in (0, None):  # --help (tyro prints it to stdout)
            raise
        raise ValueError(first_message(err.getvalue())) from None
    return cfg


def prepare(command: str, argv: list[str]) -> Config:
    """Parse, validate, resolve the device and check the command's paths: everything that can
    fail before work starts."""
    cfg = parse(command, argv)
    before = getattr(hooks, "before_import", None)
    if before is not None:
        before(cfg)
    validate(cfg)
    limit_threads(cfg.threads)
    device = resolve_device(cfg.device)
    if device != cfg.device:
        cfg = dataclasses.replace(cfg, device=device)
    spec = hooks.COMMANDS[command]
    if (cfg.partial_out or cfg.merge) and not getattr(hooks, "SPLITS_BY_SEED", False):
        raise ValueError(
            "--partial-out/--merge: this project's bench does not split by seed yet "
            "(hooks.SPLITS_BY_SEED is not set)"
        )
    if cfg.partial_out:
        check_writable_dir(Path(cfg.partial_out).parent, "--partial-out")
    for field in spec.writes:
        path = results_dir_of(cfg) if field == "results_dir" else getattr(cfg, field)
        check_writable_dir(path, "--" + field.replace("_", "-"))
    if spec.reads:
        check_readable_run(getattr(cfg, spec.reads), "--" + spec.reads.replace("_", "-"))
    return cfg


def run(command: str, argv: list[str]) -> Any:
    spec = hooks.COMMANDS[command]
    if spec.raw:
        return spec.run(argv)
    return spec.run(prepare(command, argv))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    results.git_commit()  # the commit at the start of the run labels its results
    if command not in hooks.COMMANDS:
        print(
            f"error: unknown command {command!r}; expected one of {', '.join(hooks.COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    try:
        result = run(command, rest)
    except (ValueError, FloatingPointError) as exc:  # misuse; a loss that diverged (lr too high)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path that became unwritable after the checks, a full disk
        where = exc.filename if exc.filename is not None else "output"
        print(f"error: cannot write {where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help (0), or a raw command's argparse misuse (2)
        return int(exc.code or 0)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    if result is not None:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
