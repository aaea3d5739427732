"""The verdict rule (``VERDICT_RULE``, which reports quote): its decision table, effect bands, t-tests, Holm and levels."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

from driftbench.evaluation.paired import MAX_SEEDS, Interval, paired_interval, seeds_needed

RULE_TITLE = "Verdict rule. "  # how reports head the rule
REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED = "reproduced", "direction only", "not reproduced"
INCONCLUSIVE, DETERMINISTIC = "inconclusive", "deterministic"
INVALID_PREMISE, UNTESTABLE = "invalid premise", "untestable"
VERDICTS = (REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED, INCONCLUSIVE, DETERMINISTIC, INVALID_PREMISE, UNTESTABLE)
# a tested claim's verdicts in the order of the evidence for the claim (VERDICT_RULE: monotone)
RANK = {NOT_REPRODUCED: 0, INCONCLUSIVE: 1, DIRECTION_ONLY: 2, REPRODUCED: 3}
ALPHA = 0.025  # one-sided, one look: a two-sided 95% interval above 0
LOOK_ALPHA = 0.0147  # one-sided, each of two equal looks: Pocock's boundary z = 2.178, 0.025 over both (VERDICT_RULE)
MAGNITUDE = 3.0  # an effect more than this factor off the paper's (of the logs, for a ratio) holds as a direction only
AT_LEAST, AT_MOST = BOUNDS = ("at_least", "at_most")  # a claim's paper value as a bound on the effect (VERDICT_RULE)
SPREAD = 1e-9  # a statistic whose values at every seed lie within this (relative to them) is one value: deterministic


@dataclass(frozen=True)
class Decision:
    """One row of the decision table: what a tested claim meets, and its verdict."""

    meets: str
    verdict: str


# the decision table (VERDICT_RULE), row by row: a tested claim's verdict is the first row it meets
PASS_WITHIN, PASS_OFF, SIGN_EXCLUDED, ABOVE, BELOW, OPEN = "pass within", "pass off", "sign", "above", "below", "open"
DECISIONS = {
    PASS_WITHIN: Decision("it passes, our effect within the band", REPRODUCED),
    PASS_OFF: Decision("it passes, our effect outside the band", DIRECTION_ONLY),
    SIGN_EXCLUDED: Decision("the 95% t-interval of mean(e) lies below 0", NOT_REPRODUCED),
    ABOVE: Decision("the 95% interval of our effect lies wholly above the band (the magnitude decided off)", DIRECTION_ONLY),
    BELOW: Decision("it lies wholly below the band (the paper's effect is excluded)", NOT_REPRODUCED),
    OPEN: Decision("none of these: the seeds leave it open (as one seed always does)", INCONCLUSIVE),
}
TABLE = "; ".join(f"({i}) {d.meets}: {d.verdict}" for i, d in enumerate(DECISIONS.values(), 1))
# the rule, written once: reports, the leaderboard page and docs/reproduce.md quote it
VERDICT_RULE = (
    "For each seed the claim's statistic e is computed from that seed's runs (one pair, or one set, "
    'of runs on the same trace and seed), positive when the claim holds at that seed. For "A > B" it is metric(A) '
    '- metric(B), for "A < B" metric(B) - metric(A), less X for "by X"; for "increasing" or "decreasing" over the '
    "claim's methods in order, the smallest step between neighbours in the claimed direction. "
    "A ratio effect (a speed-up, a cost ratio) is judged on the log scale: e is formed from the logs of the metric, "
    "so e is the log of the ratio, and our effect r and the paper's R are compared as ln r against ln R, the "
    'difference the two methods make on that scale: "more than 3x off" means ln r / ln R outside 1/3 to 3 (a 1.2x '
    "claim reproduces from 1.063x to 1.728x), where r / R within 3x would accept anything from no effect to 3.6x. "
    "A time-to-accuracy claim (tta_speedup) compares -ln(simulated time to the target method's final accuracy), "
    "the paper's speed-up; the method claimed faster must reach the target at every seed, or the claim is not "
    "reproduced (a run that never reaches it gives no speed-up). "
    'Before any test, a claim\'s premises must hold, else its verdict is "invalid premise" with the failing value: '
    "a premise on a metric fails where the seeds exclude it (the 95% t-interval of its statistic's mean lies below 0; "
    'for "within X", that of the mean difference lies outside -X to X), and one the seed means miss but the seeds '
    "do not exclude is shown beside the verdict; every claim's implicit premise is that no run collapses without "
    'drift, and "none degenerate" that no run has a degeneracy flag. A flag on a run of the claimed method (the '
    'direction\'s first, A in "A > B", "A < B" and "A = B within X"; each of an ordering\'s) is that method\'s own '
    "behaviour, which the claim measures: it voids nothing and is shown beside the verdict, save a collapse without "
    "drift under a metric read from the run's own level before a drift (a drop, a recovery, a Delta, forgetting), "
    "which a collapse before the drift leaves without meaning. "
    "A claim whose statistic takes one value at every seed (its compared runs identical, or a metric the seeds do "
    'not vary, such as counted work) is "deterministic": one value, so its seeds are one measurement and no test '
    "applies; it has no p-value and is in no Holm family, and the report shows the value beside the paper's. "
    "Each other claim's p-value is the one-sided paired t-test of mean(e) > 0; "
    '"A = B within X" is an equivalence test instead (TOST: both one-sided t-tests of |mean(A - B)| < X, p the larger). '
    "The p-values of each paper's claims are adjusted together by Holm's method (a paper's driftbench claims, "
    "on figures the paper does not report, and its literal twins each form their own family). "
    "A claim passes if its Holm-adjusted p-value is below its level, each look at its own: a claim judged at one "
    "look tests at 0.025 (a 95% interval above 0 for one claim alone), a claim with two looks at Pocock's level for "
    "two equal looks, 0.0147 (z = 2.178), at each. A report of two stages declares its second stage before it runs: "
    "the claims the first stage's seeds (0-4) leave inconclusive run as many seeds again (5-9) and are judged on all "
    "of them, which holds the chance of passing a false claim at 0.025 over both looks; a claim decided at the first "
    "look keeps its verdict, the second look's Holm family holds each claim's p-value from its last look, and the "
    "literal twins, never run again, are judged once, at 0.025. "
    "A claim's effect, in the paper's unit (the log of a ratio), is set against the band the paper's effect allows: "
    'from a third of it to 3x it; from an "at least" bound up, or up to an "at most" bound, where the paper bounds '
    "the effect without printing it; none where the paper gives no effect. The verdict of a tested claim is the first "
    f"row of the decision table it meets: {TABLE}, when the report says how many seeds would settle it at the "
    "observed spread. The verdicts rank not reproduced < inconclusive < direction only < reproduced, and the table "
    "is monotone: moving every seed's values toward the claimed direction never lowers the rank, save that an effect "
    "moved past the band's top turns reproduced into direction only. A claim whose method, variant, trace, "
    "data or runs are missing, or whose paper workload the trace does not build yet, is untestable, and its row says why."
)


def one_sided_p(values: Sequence[float] | np.ndarray) -> float:
    """p-value of the one-sided paired t-test of mean > 0 (with no spread: 0 if the mean is above 0, else 1; judging
    tests no claim without spread, which is ``DETERMINISTIC``)."""
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
    """The one-sided level each look of a claim judged at ``looks`` looks tests at (VERDICT_RULE)."""
    return ALPHA if looks == 1 else LOOK_ALPHA


def one_value(values: Sequence[float] | np.ndarray) -> bool:
    """Whether ``values`` (a claim's statistic at each of two or more seeds) are one value: no spread beyond rounding."""
    x = np.asarray(values, dtype=float)
    return x.size >= 2 and float(np.ptp(x)) <= SPREAD * max(1.0, float(np.abs(x).max()))


@dataclass(frozen=True)
class Band:
    """The effects the verdict rule reads as the paper's, on the effect scale (logs for ratios): ``low`` to ``high``."""

    low: float
    high: float

    def holds(self, value: float) -> bool:
        """Whether ``value`` lies in the band."""
        return self.low <= value <= self.high


def band(paper: float | None, bound: str | None, ratio: bool) -> Band | None:
    """The band of a paper's effect (a ratio: its log) or bound (``BOUNDS``); None without a positive effect to compare."""
    if paper is None or (ratio and paper <= 0):
        return None
    value = math.log(paper) if ratio else paper
    if bound == AT_LEAST:
        return Band(value, math.inf)
    if bound == AT_MOST:
        return Band(-math.inf, value)
    return Band(value / MAGNITUDE, value * MAGNITUDE) if value > 0 else None


@dataclass(frozen=True)
class Effect:
    """A claim's effect at each seed in the paper's unit, and the band of effects the paper's claim allows."""

    values: tuple[float, ...]  # differences, or ratios (``ratio``)
    band: Band | None  # on the effect scale (logs for ratios); None: nothing to compare with
    ratio: bool = False  # ratios: judged on their logs

    def scale(self, value: float) -> float:
        """A value in the paper's unit on the effect scale: its log, for ratios."""
        return math.log(value) if self.ratio else value

    def unit(self, value: float) -> float:
        """A value on the effect scale back in the paper's unit."""
        return math.exp(value) if self.ratio else value

    def interval(self) -> Interval:
        """The 95% t-interval of the mean effect (of the mean log, for ratios, back on the ratio scale)."""
        interval = paired_interval([self.scale(v) for v in self.values])
        assert interval is not None  # a claim is judged on at least one seed
        return Interval(self.unit(interval.mean), self.unit(interval.low), self.unit(interval.high), interval.n)

    def holds(self) -> bool:
        """Whether our effect (its mean on the effect scale) lies in the band; yes without one."""
        return self.band is None or self.band.holds(self.scale(self.interval().mean))

    def side(self) -> str | None:
        """``ABOVE`` or ``BELOW`` where the 95% interval lies wholly beyond the band's top or under its bottom, else None."""
        shown = self.interval()
        if self.band is None or shown.n < 2:
            return None
        if self.scale(shown.low) > self.band.high:
            return ABOVE
        return BELOW if self.scale(shown.high) < self.band.low else None

    def band_text(self) -> str:
        """The band in the paper's unit: ``3.33 to 30``, ``6 up`` (an "at least" bound) or ``up to 0.9`` ("at most")."""
        assert self.band is not None
        unit = "x" if self.ratio else ""
        low, high = (f"{self.unit(edge):.3g}{unit}" for edge in (self.band.low, self.band.high))
        if math.isinf(self.band.high):
            return f"{low} up"
        return f"up to {high}" if math.isinf(self.band.low) else f"{low} to {high}"

    def outside(self) -> str:
        """Why the decision table reads our effect outside the band (``side``), with its interval and the edge it passes."""
        shown, unit = self.interval(), "x" if self.ratio else ""
        assert self.band is not None
        span = f"our effect's 95% interval [{shown.low:.3g}{unit}, {shown.high:.3g}{unit}]"
        if self.side() == ABOVE:
            return f"the magnitude is decided off: {span} lies above {self.unit(self.band.high):.3g}{unit}"
        return f"the paper's effect is excluded: {span} lies below {self.unit(self.band.low):.3g}{unit}"


def relative(ours: float | None, paper: float | None, ratio: bool) -> float | None:
    """Our effect over the paper's on the effect scale (ln ours / ln paper for ratios); None without both or with none."""
    if ours is None or paper is None or (ratio and (ours <= 0 or paper <= 0)):
        return None
    theirs = math.log(paper) if ratio else paper
    return None if theirs == 0 else (math.log(ours) if ratio else ours) / theirs


@dataclass(frozen=True)
class Evidence:
    """A tested claim's statistic at each seed and its p-value (one-sided, or TOST's): what the decision table reads."""

    statistics: tuple[float, ...]
    p: float

    def margin(self) -> Interval:
        """The 95% t-interval of mean(e)."""
        interval = paired_interval(self.statistics)
        assert interval is not None  # a claim is judged on at least one seed
        return interval


def decide(evidence: Evidence, effect: Effect | None, passed: bool) -> str:
    """The row of the decision table (``DECISIONS``) a tested claim meets, from its evidence, effect and pass after Holm."""
    if passed:
        return PASS_WITHIN if effect is None or effect.holds() else PASS_OFF
    if evidence.margin().high < 0:
        return SIGN_EXCLUDED
    return (None if effect is None else effect.side()) or OPEN


def judged(evidence: Evidence, effect: Effect | None, alpha: float, holm_p: tuple[float, int] | None = None) -> tuple[str, str]:
    """The decision table's row (a ``DECISIONS`` key) a tested claim meets at level ``alpha``, and why: alone, or after
    Holm (``holm_p``: its p, the family's size). The row's ``verdict`` is the claim's."""
    margin = evidence.margin()
    held = sum(e > 0 for e in evidence.statistics)
    reason = f"holds at {held}/{margin.n} seeds; mean margin {margin.mean:+.3g}"
    if margin.n < 2:
        return OPEN, f"{reason}; one seed gives no interval"
    reason += f", 95% interval [{margin.low:+.3g}, {margin.high:+.3g}], p {evidence.p:.2g}"
    p = evidence.p
    if holm_p is not None:
        p, family = holm_p
        reason += f"; Holm over {family} claims: p {p:.2g}"
    row = decide(evidence, effect, p < alpha)
    if row in (ABOVE, BELOW):
        assert effect is not None
        reason += f"; {effect.outside()}"
    elif row == PASS_OFF:
        assert effect is not None
        unit = "x" if effect.ratio else ""
        reason += f"; our effect {effect.interval().mean:.3g}{unit} lies outside the band, {effect.band_text()}"
    elif row == OPEN:
        needed = seeds_needed(evidence.statistics)
        reason += f"; at this spread {f'about {needed} seeds' if needed else f'no number of seeds up to {MAX_SEEDS}'}"
        reason += " would settle it"
    return row, reason
