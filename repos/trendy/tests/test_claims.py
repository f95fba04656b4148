"""The structured claims (three-way verdicts) on synthetic per-instance errors."""

from __future__ import annotations

import numpy as np

from trendy.bench import Collector, turing_claims


def turing_collector(trendy, shuffled, theta_fixed, state_fixed, seeds=3) -> Collector:
    """Per-A relative errors around the given levels for the Turing claim's rows."""
    rng = np.random.default_rng(0)
    col = Collector()
    rows = {
        ("TRENDy", "turing_rel_err"): trendy,
        ("TRENDy-shuffled-theta", "turing_rel_err"): shuffled,
        ("TRENDy", "turing_theta_fixed_rel_err"): theta_fixed,
        ("TRENDy", "turing_state_fixed_rel_err"): state_fixed,
        ("TRENDy", "turing_jacobian_rel_err"): 0.6,
        ("oracle-PDE", "turing_rel_err"): 0.01,
        ("floor-lowest-B", "turing_rel_err"): 0.6,
    }
    for _ in range(seeds):
        for (method, metric), level in rows.items():
            inst = level * (1 + 0.05 * rng.standard_normal(5))
            col.add(method, metric, float(inst.mean()), inst)
    return col


def verdicts(col: Collector) -> dict[str, str]:
    return {c["id"]: c["verdict"] for c in turing_claims(col)}


def test_turing_claim_holds_only_when_the_onset_comes_from_theta():
    good = verdicts(turing_collector(0.05, 0.5, 0.6, 0.05))
    assert good == {"turing-onset": "holds", "turing-control-shuffled": "contradicted"}
    # the model reads the onset from the state: fixing theta leaves it in place
    from_state = turing_collector(0.05, 0.5, 0.05, 0.6)
    assert verdicts(from_state)["turing-onset"] == "contradicted"
    # the shuffled control reads the line better than TRENDy: the claim is contradicted and
    # its control holds (the flag the report counts)
    control_wins = verdicts(turing_collector(0.1, 0.04, 0.6, 0.1))
    assert control_wins == {"turing-onset": "contradicted", "turing-control-shuffled": "holds"}


def test_a_claim_never_holds_on_fewer_than_three_seeds():
    (claim, _) = turing_claims(turing_collector(0.05, 0.5, 0.6, 0.05, seeds=2))
    assert claim["verdict"] == "inconclusive" and claim["seeds_needed"] == 3
    assert all(p["n"] == 2 for p in claim["test"])
