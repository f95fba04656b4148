"""The paired bootstrap behind every claim's interval."""

from __future__ import annotations

import numpy as np
import pytest

from trendy import stats


def test_interval_covers_the_point_and_shrinks_with_more_instances():
    rng = np.random.default_rng(0)
    small = [[rng.normal(1.0, 1.0, 5)] for _ in range(3)]
    large = [[rng.normal(1.0, 1.0, 200)] for _ in range(3)]
    a, b = (stats.hierarchical_bootstrap(np.mean, g) for g in (small, large))
    assert a["low"] <= a["value"] <= a["high"] and b["low"] <= b["value"] <= b["high"]
    assert b["high"] - b["low"] < a["high"] - a["low"]
    assert b["low"] < 1.0 < b["high"]


def test_paired_difference_sees_a_shift_that_unpaired_noise_would_hide():
    rng = np.random.default_rng(1)
    base = [rng.normal(0, 5.0, 30) for _ in range(4)]  # large spread shared by both methods
    groups = [[x + 0.5, x] for x in base]
    diff = stats.hierarchical_bootstrap(stats.mean_difference, groups)
    assert abs(diff["value"] - 0.5) < 1e-9 and diff["low"] > 0.4
    ratio = stats.hierarchical_bootstrap(
        stats.ratio_of_means, [[2 * np.abs(x), np.abs(x)] for x in base]
    )
    assert abs(ratio["value"] - 2.0) < 1e-9 and ratio["low"] > 1.99


def test_log_ratio_change_is_positive_when_the_first_method_degrades_faster():
    lo_a, lo_b = np.ones(10), np.ones(10)
    hi_a, hi_b = 4 * np.ones(10), 2 * np.ones(10)
    assert abs(stats.log_ratio_change(hi_a, hi_b, lo_a, lo_b) - np.log(2)) < 1e-12


def test_empty_groups_are_a_clear_error():
    with pytest.raises(ValueError, match="at least one seed"):
        stats.hierarchical_bootstrap(np.mean, [])
