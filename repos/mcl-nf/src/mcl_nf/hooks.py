"""What each command of the generated cli.py runs: this project's wiring."""

from __future__ import annotations

import argparse

from .commands import OneLineParser, standard
from .config import PHOTOS
from .runtime import Command, check_writable_dir


def photos_parser() -> argparse.ArgumentParser:
    ap = OneLineParser(
        prog="mcl-nf photos",
        description="Write scikit-image's bundled RGB photographs (PNG) into a folder, for "
        "--image-folder (no download).",
    )
    ap.add_argument(
        "--out",
        default=PHOTOS,
        metavar="DIR",
        help=f"folder to write into (default: {PHOTOS}, where the paper preset reads them)",
    )
    return ap


def photos(argv: list[str]) -> list[str]:
    args = photos_parser().parse_args(argv)
    check_writable_dir(args.out, "--out")
    from .data import write_skimage_photos

    return [str(p) for p in write_skimage_photos(args.out)]


COMMANDS = {
    **standard(
        train="meta-train with one seed, fit the held-out signals with every method; "
        "initialisations and metrics go to --out",
        eval="reload the meta-learned initialisations in --out and fit the run's held-out "
        "signals again",
    ),
    "photos": Command(
        "write scikit-image's sample photographs (PNG) into --out, for --image-folder",
        photos,
        raw=True,
    ),
}
