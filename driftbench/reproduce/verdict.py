"""The verdict rule (``VERDICT_RULE``, which reports quote) and its statistics: paired t-tests, Holm, the paper's magnitude."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

from driftbench.evaluation.paired import MAX_SEEDS, Interval, paired_interval, seeds_needed

RULE_TITLE = "Verdict rule. "  # how reports head the rule
# the rule, written once: reports, the leaderboard page and docs/reproduce.md quote it
VERDICT_RULE = (
    "For each seed the claim's statistic e is computed from that seed's runs (one pair, or one set, "
    'of runs on the same trace and seed), positive when the claim holds at that seed. For "A > B" it is metric(A) '
    '- metric(B), for "A < B" metric(B) - metric(A), less X for "by X"; for "increasing" or "decreasing" over the '
    "claim's methods in order, the smallest step between neighbours in the claimed direction. "
    "A time-to-accuracy claim (tta_speedup) compares -ln(simulated time to the target method's final accuracy), "
    "so e for \"A > B\" is the log of A's speed-up over B, the paper's definition; "
    "the method claimed faster must reach the target at every seed, or the claim is not reproduced (a run that never "
    "reaches it gives no speed-up). Each claim's p-value is the one-sided paired t-test of mean(e) > 0; "
    '"A = B within X" is an equivalence test instead (TOST: both one-sided t-tests of |mean(A - B)| < X, p the larger). '
    "The p-values of each paper's claims are adjusted together by Holm's method (a paper's driftbench claims, "
    "on figures the paper does not report, form their own family). Before any test, "
    'a claim\'s premises must hold on the seed means, else its verdict is "invalid premise" with the failing value. '
    "A claim passes if its Holm-adjusted p-value is below the look's level: "
    "0.025 in a report of one stage (a 95% interval above 0 for one claim alone). "
    "A report of two stages declares its second stage before it runs: the claims the first stage's seeds (0-4) "
    "leave inconclusive run as many seeds again (5-9) and are judged on all of them, "
    "and both looks test at Pocock's level for two equal looks, 0.0147 (z = 2.178), "
    "which holds the chance of passing a false claim at 0.025 over both; a claim decided at the first look keeps its "
    "verdict, and the second look's Holm family holds each claim's p-value from its last look. "
    "A claim that passes is reproduced if its effect is within 3x of the paper's (ratio ours/paper between 1/3 and 3; "
    "effects compared as differences in the paper's unit, or as ratios for speed-ups and ratio effects), "
    'and "direction only" if it is more than 3x off. Where the paper prints no effect but bounds it ("up to 0.9 %", '
    '"no gains"), the claim\'s paper value is that bound: it reproduces if our effect is at least (or at most) the bound, '
    'the 3x rule not applying, and holds as "direction only" on the wrong side of it. '
    "A claim that does not pass is not reproduced if the 95% t-interval of mean(e) lies below 0, "
    "or if the 95% t-interval of our per-seed effect (of the logs, for ratios) "
    'lies entirely below a third of the paper\'s effect (below the bound, for an "at least" bound): '
    "the paper's effect is excluded. It is inconclusive otherwise (always with one seed), "
    "when the report says how many seeds would settle it at the observed spread. A claim whose method, variant, trace, "
    "data or runs are missing, or whose paper workload the trace does not build yet, is untestable, and its row says why."
)
REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED = "reproduced", "direction only", "not reproduced"
INCONCLUSIVE, INVALID_PREMISE, UNTESTABLE = "inconclusive", "invalid premise", "untestable"
VERDICTS = (REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED, INCONCLUSIVE, INVALID_PREMISE, UNTESTABLE)
ALPHA = 0.025  # one-sided, one look: a two-sided 95% interval above 0
LOOK_ALPHA = 0.0147  # one-sided, each of two equal looks: Pocock's boundary z = 2.178, 0.025 over both (VERDICT_RULE)
MAGNITUDE = 3.0  # an effect more than this factor off the paper's, with the right sign, holds as a direction only
AT_LEAST, AT_MOST = BOUNDS = ("at_least", "at_most")  # a claim's paper value as a bound on the effect (VERDICT_RULE)


@dataclass(frozen=True)
class Test:
    """A claim's test at its seeds: the preliminary verdict, the numbers behind it and the p-value Holm adjusts."""

    verdict: str
    reason: str
    p: float  # one-sided (or TOST) p-value of "the claim holds"
    excluded: str | None = None  # why the paper's effect is excluded (``Effect.excluded``), where it is


def one_sided_p(values: Sequence[float] | np.ndarray) -> float:
    """p-value of the one-sided paired t-test of mean > 0 (with no spread: 0 if the mean is above 0, else 1)."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return 1.0
    sd = float(x.std(ddof=1))
    if sd == 0.0:
        return 0.0 if x.mean() > 0 else 1.0
    return float(student_t.sf(float(x.mean()) / (sd / math.sqrt(x.size)), x.size - 1))


def tost_p(differences: Sequence[float] | np.ndarray, margin: float) -> float:
    """Two one-sided tests that |mean difference| < ``margin``: the larger of the two p-values."""
    d = np.asarray(differences, dtype=float)
    return max(one_sided_p(margin - d), one_sided_p(d + margin))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p)
    steps = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(steps, 1.0)
    return [float(v) for v in adjusted]


def level(looks: int) -> float:
    """The one-sided level each look of a report of ``looks`` stages tests at (VERDICT_RULE)."""
    return ALPHA if looks == 1 else LOOK_ALPHA


@dataclass(frozen=True)
class Effect:
    """A claim's effect at each seed in the paper's unit, and the least effect the paper's claim allows."""

    values: tuple[float, ...]  # differences, or ratios (``ratio``)
    least: float  # a third of the paper's effect (not below no effect), an "at least" bound, or no effect
    ratio: bool = False  # ratios: the interval is taken on their logs

    def interval(self) -> Interval:
        """The 95% t-interval of the mean effect (of the mean log, for ratios, back on the ratio scale)."""
        interval = paired_interval([math.log(v) for v in self.values] if self.ratio else self.values)
        assert interval is not None  # a claim is judged on at least one seed
        if not self.ratio:
            return interval
        return Interval(math.exp(interval.mean), math.exp(interval.low), math.exp(interval.high), interval.n)

    def excluded(self) -> str | None:
        """Why the paper's effect is excluded (the whole interval lies below ``least``); None where it is not."""
        shown = self.interval()
        if shown.n < 2 or shown.high >= self.least:
            return None
        unit = "x" if self.ratio else ""
        return (
            f"the paper's effect is excluded: our effect's 95% interval [{shown.low:.3g}{unit}, {shown.high:.3g}{unit}] "
            f"lies below {self.least:.3g}{unit}"
        )


def least_effect(paper: float | None, bound: str | None, ratio: bool) -> float:
    """The least effect a claim allows: a third of the paper's (no less than none), an "at least" bound, else none."""
    none = 1.0 if ratio else 0.0
    if paper is None or bound == AT_MOST:
        return none
    if bound == AT_LEAST:
        return paper
    return max(none, paper / MAGNITUDE)


def test(statistics: Sequence[float], p: float, effect: Effect | None = None, alpha: float = ALPHA) -> Test:
    """The verdict rule's test (VERDICT_RULE) of per-seed statistics, p-value and effect, before Holm and magnitude."""
    interval = paired_interval(statistics)
    assert interval is not None  # a claim is judged on at least one seed
    held = sum(e > 0 for e in statistics)
    numbers = f"holds at {held}/{interval.n} seeds; mean margin {interval.mean:+.3g}"
    if interval.n < 2:
        return Test(INCONCLUSIVE, f"{numbers}; one seed gives no interval", 1.0)
    numbers += f", 95% interval [{interval.low:+.3g}, {interval.high:+.3g}], p {p:.2g}"
    excluded = None if effect is None else effect.excluded()
    if p < alpha:
        return Test(REPRODUCED, numbers, p, excluded)
    if interval.high < 0:
        return Test(NOT_REPRODUCED, numbers, p, excluded)
    if excluded:
        return Test(NOT_REPRODUCED, f"{numbers}; {excluded}", p, excluded)
    needed = seeds_needed(statistics)
    settle = f"about {needed} seeds would settle it" if needed else f"no number of seeds up to {MAX_SEEDS} would settle it"
    return Test(INCONCLUSIVE, f"{numbers}; at this spread {settle}", p, excluded)


def adjusted(result: Test, p_holm: float, family: int, alpha: float = ALPHA) -> Test:
    """The test after Holm over ``family`` claims: a pass no longer below ``alpha`` is inconclusive (or its effect excluded)."""
    reason = f"{result.reason}; Holm over {family} claims: p {p_holm:.2g}"
    if result.verdict == REPRODUCED and p_holm >= alpha:
        if result.excluded:
            return Test(NOT_REPRODUCED, f"{reason}; {result.excluded}", result.p, result.excluded)
        return Test(INCONCLUSIVE, reason, result.p)
    return Test(result.verdict, reason, result.p, result.excluded)


def magnitude(ours: float | None, paper: float | None, bound: str | None = None) -> bool:
    """Whether our effect matches the paper's: ours/paper within MAGNITUDE either way, or on the right side of a bound.

    ``bound`` (``BOUNDS``): the paper's value is a bound, ``at_least`` or ``at_most``, and
    the MAGNITUDE rule does not apply. Without both effects (or with a paper effect of 0 and no
    bound) there is nothing to compare, so yes.
    """
    if ours is None or paper is None:
        return True
    if bound is not None:
        return ours >= paper if bound == AT_LEAST else ours <= paper
    return paper == 0 or 1 / MAGNITUDE <= ours / paper <= MAGNITUDE
