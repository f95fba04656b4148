"""Command line: `regent {train,eval,bench} [--preset NAME] [--FIELD VALUE ...]` and
`regent demos PATH [--write FAMILY]` (read, or first write, a demonstrations .npz).

Thin on purpose: flags become a Config (every field is a flag), then the library is called.
Misuse (unknown command, bad preset, bad value) prints one line to stderr and exits 2.
"""

from __future__ import annotations

import json
import sys

import tyro

from .config import PRESETS, Config, validate

COMMANDS = {
    "train": "train the method with one seed and write metrics to --out",
    "eval": "print the metrics of a finished run in --out",
    "bench": "run every method over --seeds and write results/<preset>.json",
}
DEMOS_USAGE = "regent demos PATH [--write point|grid]"
USAGE = (
    "usage: regent {train,eval,bench} [--preset quick|paper|full] [--FIELD VALUE ...]\n"
    f"       {DEMOS_USAGE}\n\n"
    + "\n".join(f"  {name:6s} {text}" for name, text in COMMANDS.items())
    + "\n  demos  summarise a demonstrations .npz (obs, act, rew, episode rows); --write FAMILY "
    "first saves 5 noisy expert episodes of that family's first task there"
    + "\n\n`regent COMMAND --help` lists every flag with its meaning and preset default."
)


def parse(command: str, argv: list[str]) -> Config:
    """Split off --preset, then let tyro turn the remaining flags into a Config."""
    preset, rest, i = "quick", [], 0
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
    cfg = tyro.cli(
        Config,
        default=PRESETS[preset],
        args=rest,
        prog=f"regent {command}",
        description=f"{COMMANDS[command]}. --preset {'|'.join(PRESETS)} picks the defaults "
        f"(now: {preset}).",
    )
    return validate(cfg)


def demos_command(argv: list[str]) -> dict:
    """Read (after --write: first write) a demonstrations file and describe it."""
    from .data import load_demos, rollout_expert, save_demos
    from .envs import FAMILIES, make_tasks
    from .retrieval import p95_normaliser

    if len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--write"):
        raise ValueError(f"usage: {DEMOS_USAGE}")
    path = argv[0]
    if len(argv) == 3:
        if argv[2] not in FAMILIES:
            raise ValueError(f"--write needs a family in {FAMILIES}, got {argv[2]!r}")
        if not path.endswith(".npz"):
            raise ValueError(f"{path}: the file name must end in .npz")
        save_demos(path, rollout_expert(make_tasks(argv[2], 1, seed=0)[0], 5, seed=0, noise=0.1))
    demos = load_demos(path)
    return {
        "file": path,
        "rows": len(demos),
        "episodes": demos.n_episodes,
        "obs_dim": int(demos.obs.shape[1]),
        "discrete_actions": demos.discrete,
        "p95_nn1": p95_normaliser(demos, "nn1"),
        "p95_context": p95_normaliser(demos, "context"),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "demos":
        try:
            print(json.dumps(demos_command(rest), indent=2))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    if command not in COMMANDS:
        print(
            f"error: unknown command {command!r}; expected one of {', '.join(COMMANDS)}, demos",
            file=sys.stderr,
        )
        return 2
    try:
        cfg = parse(command, rest)
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
