"""What each command of the generated cli.py runs: this project's wiring (edit freely)."""

from __future__ import annotations

from .commands import standard

COMMANDS = standard(
    train="train DDO and every baseline with one seed; save the models, samples and metrics "
    "in --out",
    eval="reload the models saved in --out, draw fresh samples from them and score them",
)
# No SPLITS_BY_SEED: the bench tunes on the validation seed before the test seeds run.
