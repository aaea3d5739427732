"""Paired comparisons over seeds: a mean difference with its 95% t-interval, a ratio of two paired means with
Fieller's set, and how many seeds would settle a difference.

Two methods' runs of the same trace and seed form a pair; the per-seed differences are
treated as independent draws, and the interval is Student's t on their mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

CONFIDENCE = 0.95
MAX_SEEDS = 1000  # seeds_needed gives up beyond this


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` paired differences and its two-sided 95% interval (infinite with one pair)."""

    mean: float
    low: float
    high: float
    n: int

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the interval: the difference is not distinguishable from it."""
        return self.low <= value <= self.high


def half_width(std: float, n: int) -> float:
    """The 95% t-interval's half-width for ``n`` values of sample std ``std`` (inf below 2 values)."""
    if n < 2:
        return math.inf
    return critical_t(n) * std / math.sqrt(n)


def critical_t(n: int) -> float:
    """Student's t quantile of the two-sided 95% interval of the mean of ``n`` >= 2 values."""
    return float(student_t.ppf(0.5 + CONFIDENCE / 2, n - 1))


def paired_interval(differences: Sequence[float]) -> Interval | None:
    """The interval of the mean of per-seed differences; None without any."""
    values = np.asarray(differences, dtype=float)
    if values.size == 0:
        return None
    mean = float(values.mean())
    width = half_width(float(values.std(ddof=1)) if values.size > 1 else 0.0, values.size)
    return Interval(mean, mean - width, mean + width, int(values.size))


@dataclass(frozen=True)
class Ratio:
    """A ratio of paired means over ``n`` pairs with Fieller's 95% set: [low, high], or low -inf and high inf where the
    set is unbounded (two rays or the whole line); ``contains_zero``: whether the set holds 0, exactly in either case."""

    mean: float
    low: float
    high: float
    n: int
    contains_zero: bool


def paired_ratio_interval(numerators: Sequence[float], denominators: Sequence[float]) -> Ratio | None:
    """The ratio of the means of paired values, mean(numerators) / mean(denominators), with Fieller's 95% set.

    The set holds every ratio r whose per-seed differences ``numerator - r x denominator``
    have a paired t-interval containing 0: the paired test inverted, so the spread of the
    denominator and its covariance with the numerator count (a ratio of per-seed ratios would
    let one seed with a small denominator swing the mean). Where the denominator's own interval
    contains 0 the set is unbounded (low -inf, high inf); with one pair it is too. It holds
    r = 0 where the paired t-test of the numerators does not reject 0, bounded or not. None
    without pairs, or where every denominator is 0 (no ratio).
    """
    top, bottom = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    n = top.size
    if n == 0 or not bottom.any():
        return None
    a, b = float(top.mean()), float(bottom.mean())
    if n < 2:
        return Ratio(a / b if b else math.nan, -math.inf, math.inf, n, True)
    (s_aa, s_ab), (_, s_bb) = np.cov(top, bottom, ddof=1).tolist()
    q = critical_t(n) ** 2 / n
    square, middle, constant = b * b - q * s_bb, a * b - q * s_ab, a * a - q * s_aa  # square r^2 - 2 middle r + constant <= 0
    zero = constant <= 0  # the quadratic at r = 0
    if square <= 0:
        return Ratio(a / b if b else math.nan, -math.inf, math.inf, n, zero)
    root = math.sqrt(max(middle * middle - square * constant, 0.0))  # >= 0 up to rounding: r = a / b lies inside
    return Ratio(a / b, (middle - root) / square, (middle + root) / square, n, zero)


def seeds_needed(differences: Sequence[float]) -> int | None:
    """Fewest seeds whose 95% interval would exclude 0 at the observed mean and spread; None if none up to MAX_SEEDS."""
    values = np.asarray(differences, dtype=float)
    if values.size < 2 or values.mean() == 0:
        return None
    mean, std = abs(float(values.mean())), float(values.std(ddof=1))
    return next((n for n in range(2, MAX_SEEDS + 1) if half_width(std, n) < mean), None)
