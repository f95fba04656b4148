"""The claims' checks on hand-made metrics: each can fail, and its negative control fails it."""

from __future__ import annotations

import pytest

from bnn_renorm.bench import claims_from, seed_worst
from bnn_renorm.results import summarize

METHODS = (
    "bpkr",
    "bpkr_legacy_s2",
    "exact",
    "mp_integral",
    "mp_population",
    "nngp",
    "bpkr_relu",
    "bpkr_relu_lin",
    "sublinear",
    "sublinear_untrained",
)


def fake_metrics(sub_error: float, seeds: int = 3) -> dict:
    """`seeds` seeds; BPKR accurate at linear width (s2 = 0.5 and 2 against Gibbs), off by 200%
    at N = 2; the old s2 convention 30-50% off; the estimator off by `sub_error`; the floors (NNGP,
    untrained kernels) far off everywhere."""

    def m(*values):
        return summarize([values[i % len(values)] for i in range(seeds)])

    metrics = {name: {} for name in METHODS}
    for tag in ("s0.5_a2", "s2_a4"):
        metrics["bpkr"][f"gibbs_relerr_{tag}"] = m(0.01, 0.02, 0.015)
        metrics["exact"][f"gibbs_relerr_{tag}"] = m(0.01, 0.02, 0.015)
        metrics["bpkr_legacy_s2"][f"gibbs_relerr_{tag}"] = m(0.3, 0.5, 0.4)
        metrics["nngp"][f"gibbs_relerr_{tag}"] = m(0.6, 0.7, 0.65)
    for a in ("0.5", "2"):
        metrics["bpkr"][f"lin_relerr_a{a}"] = m(0.001, 0.002)
        metrics["mp_integral"][f"lin_vs_fp_a{a}"] = m(0.01, 0.015, 0.012)
        metrics["mp_population"][f"lin_vs_fp_a{a}"] = m(0.05, 0.2)
        metrics["nngp"][f"lin_vs_fp_a{a}"] = m(0.6, 0.7)
        metrics["bpkr_relu"][f"relu_relerr_a{a}"] = m(0.03, 0.05, 0.04)
        metrics["bpkr_relu_lin"][f"relu_relerr_a{a}"] = m(0.03, 0.05)
        metrics["nngp"][f"relu_relerr_a{a}"] = m(0.4, 0.5, 0.45)
    for n, bpkr in (("2", 2.0), ("20", 0.8)):
        metrics["bpkr_relu"][f"subrelu_relerr_n{n}"] = m(bpkr, bpkr * 1.1)
        metrics["bpkr_relu"][f"subrelu_logerr_n{n}"] = m(1.1, 1.0)
        metrics["sublinear"][f"subrelu_relerr_n{n}"] = m(sub_error, sub_error * 0.9)
        metrics["sublinear"][f"subrelu_logerr_n{n}"] = m(sub_error, sub_error * 1.1)
        metrics["sublinear_untrained"][f"subrelu_relerr_n{n}"] = m(0.7, 0.8)
        metrics["sublinear_untrained"][f"subrelu_logerr_n{n}"] = m(0.9, 1.2)
        metrics["nngp"][f"subrelu_relerr_n{n}"] = m(0.6, 0.5)
        metrics["nngp"][f"subrelu_logerr_n{n}"] = m(0.9, 0.7)
    return metrics


def test_claims_hold_on_good_metrics_and_every_negative_control_fails_its_check():
    claims = claims_from(fake_metrics(0.05))
    assert [c["verdict"] for c in claims] == ["holds"] * 5
    assert all(c["test"] and all(p["n"] == 3 for p in c["test"]) for c in claims)
    controls = [c["negative_control"] for c in claims]
    controls += [claims[0]["negative_control_2"], claims[-1]["negative_control_2"]]
    assert [c["passes_the_same_check"] for c in controls] == [False] * 7
    assert all(c["verdict"] != "holds" for c in controls)


def test_old_prior_variance_convention_contradicts_the_linear_claim():
    """BPKR with the second pass's bug (Kb = X X^T / N0) is 30-50% off Gibbs: contradicted."""
    assert claims_from(fake_metrics(0.05))[0]["negative_control"]["verdict"] == "contradicted"
    metrics = fake_metrics(0.05)
    metrics["bpkr"] = dict(metrics["bpkr"]) | {
        k: v for k, v in metrics["bpkr_legacy_s2"].items() if k.startswith("gibbs_relerr_")
    }
    assert claims_from(metrics)[0]["verdict"] == "contradicted"


def test_no_claim_holds_on_two_seeds():
    claims = claims_from(fake_metrics(0.05, seeds=2))
    assert all(c["verdict"] != "holds" for c in claims)
    assert all(c.get("seeds_needed", 3) >= 3 for c in claims)


def test_sublinear_claim_fails_when_the_estimator_misses_the_tolerance():
    claims = {c["id"]: c for c in claims_from(fake_metrics(0.3))}
    assert claims["sublinear-estimator-15pct-beats-bpkr"]["verdict"] == "contradicted"
    assert claims["sublinear-relu-bpkr-deviates"]["verdict"] == "holds"


@pytest.mark.parametrize("values", [(0.01, 0.02, 0.04), (0.02, 0.03, 0.045)])
def test_the_per_seed_worst_is_over_settings_not_seed_means(values):
    metrics = {
        "bpkr": {"gibbs_relerr_a": summarize(values), "gibbs_relerr_b": summarize([0.03] * 3)}
    }
    assert seed_worst(metrics, "bpkr", "gibbs_relerr_") == [max(v, 0.03) for v in values]
