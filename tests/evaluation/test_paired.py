"""Paired 95% intervals over seeds, and the seeds a difference would need."""

import math

import numpy as np
import pytest
from scipy import stats

from driftbench.evaluation.paired import paired_interval, paired_ratio_interval, seeds_needed


def test_the_interval_is_students_t_on_the_mean_difference():
    differences = [0.12, 0.08, 0.15, 0.05]
    interval = paired_interval(differences)
    low, high = stats.t.interval(0.95, 3, loc=np.mean(differences), scale=stats.sem(differences))
    assert (interval.mean, interval.low, interval.high, interval.n) == pytest.approx((np.mean(differences), low, high, 4))
    assert not interval.contains(0.0) and interval.contains(0.1)


def test_one_seed_has_no_interval_and_none_no_mean():
    one = paired_interval([0.3])
    assert one.mean == 0.3 and (one.low, one.high) == (-math.inf, math.inf) and one.contains(0.0)
    assert paired_interval([]) is None


def test_seeds_needed_is_the_first_n_whose_interval_excludes_zero():
    differences = [0.02, -0.01, 0.03]  # mean 0.0133, std 0.0208
    n = seeds_needed(differences)
    std, mean = np.std(differences, ddof=1), np.mean(differences)
    assert stats.t.ppf(0.975, n - 1) * std / math.sqrt(n) < mean <= stats.t.ppf(0.975, n - 2) * std / math.sqrt(n - 1)
    assert seeds_needed([0.1, -0.1]) is None and seeds_needed([0.1]) is None
    assert seeds_needed([0.2, 0.2, 0.2]) == 2  # no spread: two seeds settle it


def test_the_ratio_interval_holds_the_ratios_the_paired_t_test_does_not_reject():
    top, bottom = np.array([0.10, 0.16, 0.07, 0.12, 0.11]), np.array([0.30, 0.28, 0.22, 0.31, 0.26])
    interval = paired_ratio_interval(top, bottom)
    assert interval.mean == pytest.approx(top.mean() / bottom.mean()) and interval.n == 5
    for r in (interval.low, interval.high):  # at either end the t-test of top - r bottom sits on its 5% boundary
        assert stats.ttest_1samp(top - r * bottom, 0.0).pvalue == pytest.approx(0.05)
    inside, outside = paired_interval(top - interval.mean * bottom), paired_interval(top - (interval.high + 0.01) * bottom)
    assert inside.contains(0.0) and not outside.contains(0.0)
    assert not interval.contains_zero and interval.low > 0


def test_a_fixed_denominator_gives_the_differences_interval_scaled():
    top = [0.1, 0.12, 0.08, 0.11]
    ratio, scaled = paired_ratio_interval(top, [0.2] * 4), paired_interval(np.array(top) / 0.2)
    assert (ratio.mean, ratio.low, ratio.high) == pytest.approx((scaled.mean, scaled.low, scaled.high))
    reference = paired_ratio_interval([0.0] * 3, [0.3, 0.2, 0.25])  # the reference: exactly 0
    assert (reference.mean, reference.low, reference.high, reference.contains_zero) == (0.0, 0.0, 0.0, True)


def test_a_denominator_not_distinguishable_from_zero_leaves_the_ratio_unbounded():
    wide = paired_ratio_interval([0.1, 0.2, 0.15], [0.01, -0.005, 0.002])
    assert (wide.low, wide.high) == (-math.inf, math.inf) and wide.mean == pytest.approx(0.45 / 0.007)
    one = paired_ratio_interval([0.1], [0.2])
    assert one.mean == pytest.approx(0.5) and (one.low, one.high) == (-math.inf, math.inf)
    assert paired_ratio_interval([], []) is None and paired_ratio_interval([0.1, 0.2], [0.0, 0.0]) is None


def test_an_unbounded_set_holds_zero_only_where_the_numerators_t_test_does_not_reject_it():
    top, bottom = [0.05, 0.06, 0.055, 0.052, 0.058], [0.02, -0.03, 0.04, -0.02, 0.01]  # top far from 0, bottom not
    rays = paired_ratio_interval(top, bottom)
    assert (rays.low, rays.high) == (-math.inf, math.inf) and rays.mean == pytest.approx(13.75)
    assert stats.ttest_1samp(top, 0.0).pvalue < 0.05 and not rays.contains_zero  # r = 0 is outside Fieller's set
    unsure = paired_ratio_interval([0.01, -0.02, 0.015, 0.005, -0.01], bottom)
    assert stats.ttest_1samp([0.01, -0.02, 0.015, 0.005, -0.01], 0.0).pvalue > 0.05 and unsure.contains_zero
    assert paired_ratio_interval([0.1], [0.2]).contains_zero  # one pair: nothing is excluded
