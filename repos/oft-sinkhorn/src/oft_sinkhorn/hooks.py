"""What each command of the generated cli.py runs: OFT-Sinkhorn's wiring."""

from __future__ import annotations

from .commands import standard

COMMANDS = standard(
    train="solve one instance (--generator/--n/--seed or --instance FILE.min) with OFT-Sinkhorn "
    "and the exact solvers; write config, stages, flow and metrics to --out",
    eval="reload the flow saved in --out and measure it against the exact optimum again",
    bench="sweep families x --sizes x --seeds, compare with POT on bipartite graphs, write "
    "<results-dir>/<preset>.json and figures",
)
