"""The claims' checks on hand-made metrics: each can fail, and its negative control fails it."""

from __future__ import annotations

from bnn_renorm.bench import claims_from, paired_interval
from bnn_renorm.results import summarize


def fake_metrics(sub_error: float) -> dict:
    """Two seeds; BPKR accurate at linear width, off by 200% at N = 2; the estimator off by
    `sub_error`; the floors (NNGP, untrained kernels) far off everywhere."""

    def m(values):
        return summarize(values)

    metrics = {
        name: {}
        for name in (
            "bpkr",
            "mp_integral",
            "mp_population",
            "nngp",
            "bpkr_relu",
            "bpkr_relu_lin",
            "sublinear",
            "sublinear_untrained",
        )
    }
    for a in ("0.5", "2"):
        metrics["bpkr"][f"lin_relerr_a{a}"] = m([0.01, 0.02])
        metrics["nngp"][f"lin_relerr_a{a}"] = m([0.6, 0.7])
        metrics["mp_integral"][f"lin_vs_fp_a{a}"] = m([0.01, 0.015])
        metrics["mp_population"][f"lin_vs_fp_a{a}"] = m([0.05, 0.2])
        metrics["nngp"][f"lin_vs_fp_a{a}"] = m([0.6, 0.7])
        metrics["bpkr_relu"][f"relu_relerr_a{a}"] = m([0.03, 0.05])
        metrics["bpkr_relu_lin"][f"relu_relerr_a{a}"] = m([0.03, 0.05])
        metrics["nngp"][f"relu_relerr_a{a}"] = m([0.4, 0.5])
    for n, bpkr in (("2", 2.0), ("20", 0.8)):
        metrics["bpkr_relu"][f"subrelu_relerr_n{n}"] = m([bpkr, bpkr])
        metrics["bpkr_relu"][f"subrelu_logerr_n{n}"] = m([1.1, 1.0])
        metrics["sublinear"][f"subrelu_relerr_n{n}"] = m([sub_error, sub_error])
        metrics["sublinear"][f"subrelu_logerr_n{n}"] = m([sub_error, sub_error * 1.1])
        metrics["sublinear_untrained"][f"subrelu_relerr_n{n}"] = m([0.7, 0.8])
        metrics["sublinear_untrained"][f"subrelu_logerr_n{n}"] = m([0.9, 1.2])
        metrics["nngp"][f"subrelu_relerr_n{n}"] = m([0.6, 0.5])
        metrics["nngp"][f"subrelu_logerr_n{n}"] = m([0.9, 0.7])
    return metrics


def test_claims_hold_on_good_metrics_and_every_negative_control_fails_its_check():
    claims = claims_from(fake_metrics(0.05))
    assert [c["holds"] for c in claims] == [True] * 5
    assert [c["negative_control"]["passes_the_same_check"] for c in claims] == [False] * 5
    assert claims[-1]["negative_control_2"]["passes_the_same_check"] is False


def test_sublinear_claim_fails_when_the_estimator_misses_the_tolerance():
    claims = {c["id"]: c["holds"] for c in claims_from(fake_metrics(0.3))}
    assert claims["sublinear-estimator-15pct-beats-bpkr"] is False
    assert claims["sublinear-relu-bpkr-deviates"] is True


def test_paired_interval_is_over_every_seed_and_setting():
    metrics = fake_metrics(0.05)
    mean, lo, hi = paired_interval(metrics, "bpkr", "nngp", "lin_relerr_a")
    assert abs(mean + 0.635) < 1e-12 and lo < mean < hi < 0
