"""What each command of the generated cli.py runs: this project's wiring."""

from __future__ import annotations

import argparse
from typing import Any

from .commands import OneLineParser, standard
from .runtime import Command


def demos_parser() -> argparse.ArgumentParser:
    from .envs import FAMILIES

    ap = OneLineParser(
        prog="regent demos",
        description="Summarise a demonstrations .npz (arrays obs, act, rew, episode): rows, "
        "episodes, observation size, action kind and both p95 distance normalisers.",
    )
    ap.add_argument("path", metavar="PATH", help="the .npz file to read")
    ap.add_argument(
        "--write",
        metavar="FAMILY",
        help=f"first save 5 noisy expert episodes of that family's first task to PATH "
        f"(one of {', '.join(FAMILIES)})",
    )
    return ap


def demos(argv: list[str]) -> dict[str, Any]:
    """Read (after --write: first write) a demonstrations file and describe it."""
    args = demos_parser().parse_args(argv)
    from .data import load_demos, rollout_expert, save_demos
    from .envs import FAMILIES, make_tasks
    from .retrieval import p95_normaliser

    if args.write is not None:
        if args.write not in FAMILIES:
            raise ValueError(f"--write needs a family in {FAMILIES}, got {args.write!r}")
        if not args.path.endswith(".npz"):
            raise ValueError(f"{args.path}: the file name must end in .npz")
        task = make_tasks(args.write, 1, seed=0)[0]
        save_demos(args.path, rollout_expert(task, 5, seed=0, noise=0.1))
    found = load_demos(args.path)
    return {
        "file": args.path,
        "rows": len(found),
        "episodes": found.n_episodes,
        "obs_dim": int(found.obs.shape[1]),
        "discrete_actions": found.discrete,
        "p95_nn1": p95_normaliser(found, "nn1"),
        "p95_context": p95_normaliser(found, "context"),
    }


COMMANDS = standard(
    train="pretrain and evaluate every method with one seed; checkpoints and metrics go to --out",
    eval="reload the checkpoints in --out and score them again on the run's held-out tasks",
)
COMMANDS["demos"] = Command(
    "summarise a demonstrations .npz; --write FAMILY first saves 5 expert episodes there",
    demos,
    raw=True,
)
