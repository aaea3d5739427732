"""A diagnosis's quote of the report's runs (``Quote``): where its numbers come from, and how they are written."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from driftbench.record.schema import ROUND_COLUMNS
from driftbench.reproduce.claim import UNITS
from driftbench.reproduce.metrics import metric_names

# each: the per-seed values joined by ", "; range: "min-max" (one value where they agree); mean-sd: "mean +/- std" (the
# sample std, as the report's rows write it); mean; min; max
FORMS = ("each", "range", "mean-sd", "mean", "min", "max")
SUMMARY_FIELDS = ("ari_final", "partition_changes", "rounds", "sim_seconds", "wall_seconds")  # summary.json, beside METRICS
NEEDS_ANOTHER_RUN = ("tta_speedup", "delta_permille_stable")  # claim metrics read against a target or twin run
ROUND_METRICS = tuple(c for c in ROUND_COLUMNS if c not in ("round", "drift_event"))  # rounds.csv's, with ``at_rounds``
MAX_DIGITS = 6
NUMBER = re.compile(r"(?:(?<![\w.)\]])-)?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def quote_metrics() -> list[str]:
    """Every metric a quote of whole runs may read: the claim metrics that read one run, then summary fields no claim
    compares."""
    return [*(m for m in metric_names() if m not in NEEDS_ANOTHER_RUN), *SUMMARY_FIELDS]


@dataclass(frozen=True)
class Quote:
    """Numbers a diagnosis's evidence quotes from the report's runs: a method's metric at some seeds, in one form."""

    text: str  # the passage of the evidence that holds the value, verbatim
    method: str
    metric: str  # quote_metrics()
    seeds: tuple[int, ...]
    form: str  # FORMS
    digits: int  # decimals
    claim: str | None = None  # the claim whose setting and method overrides the runs are in; None: ``trace`` and ``sets``
    trace: str | None = None
    sets: tuple[tuple[str, str], ...] = ()
    method_sets: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # with ``trace``: method -> its overrides
    versus: str | None = None  # the per-seed value is the method's less this method's
    unit: str | None = None  # UNITS: the values scaled to it (points: x 100); None: the metric's own
    at_rounds: tuple[int, int] | None = None  # ROUND_METRICS: each seed's evaluations in these rounds, both included

    @property
    def scale(self) -> float:
        """The factor from the metric's scale to the quote's unit."""
        return UNITS[self.unit] if self.unit else 1.0

    def describe(self) -> str:
        """What the quote reads, in words: ``final_accuracy of flhc less cflgt in points, mean at seeds 0, 1 in ...``."""
        less = f" less {self.versus}" if self.versus else ""
        unit = f" in {self.unit}" if self.unit else ""
        runs = f"claim {self.claim}'s runs" if self.claim else f"{self.trace} with {dict(self.sets) or 'its defaults'}"
        rounds = f" at rounds {self.at_rounds[0]}-{self.at_rounds[1]}" if self.at_rounds else ""
        seeds = ", ".join(map(str, self.seeds))
        return f"{self.metric}{rounds} of {self.method}{less}{unit}, {self.form} at seeds {seeds} in {runs}"


def written(values: Sequence[float], form: str, digits: int) -> str:
    """The values (one per seed, in seed order) as a quote of ``form`` writes them, each number with ``digits`` decimals."""

    def number(value: float) -> str:
        text = f"{value:.{digits}f}"
        return "0" + text[2:] if re.fullmatch(r"-0(\.0*)?", text) else text  # no negative zero

    if form == "each":
        return ", ".join(map(number, values))
    if form == "range":
        low, high = number(min(values)), number(max(values))
        return low if low == high else f"{low}-{high}"
    array = np.asarray(values, dtype=float)
    if form == "mean-sd":
        return f"{number(float(array.mean()))} +/- {number(float(array.std(ddof=1)))}"
    statistic = array.mean() if form == "mean" else array.min() if form == "min" else array.max()
    return number(float(statistic))


def numbers(text: str) -> list[str]:
    """The numeric tokens of ``text`` in order, each a maximal run such as ``0.743``, ``-0.5``, ``1e-3`` or ``16``: a minus
    is a sign only where no letter, digit, point or closing bracket precedes it, so a range ``16-19`` is 16 and 19."""
    return NUMBER.findall(text)


def gives(text: str, value: str) -> bool:
    """Whether ``text`` quotes ``value`` (as ``written``): its numbers are exactly the value's, all of them, in order."""
    return numbers(text) == numbers(value)


def producible(text: str, form: str, digits: int, values: int | None) -> bool:
    """Whether ``written`` could give ``text``'s numbers for ``values`` values (one a seed; None: any number, as of the
    evaluations in a span of rounds) in ``form``: one a value (each), the minimum below the maximum or their one value
    (range), a mean and a std of two values or more (mean-sd), or one (mean, min, max), each with ``digits`` decimals."""
    found = numbers(text)
    many = values is None or values > 1
    if form == "each":
        fits = bool(found) if values is None else len(found) == values
    elif form == "range":
        fits = len(found) in ((1, 2) if many else (1,))
    elif form == "mean-sd":
        fits = many and len(found) == 2 and not found[1].startswith("-")
    else:
        fits = len(found) == 1
    if not fits:
        return False
    return numbers(written([float(n) for n in found], "range" if form == "range" else "each", digits)) == found


def holds(text: str, value: str) -> bool:
    """Whether ``text`` holds ``value`` with the numbers at its ends whole: where ``value`` starts with a number, no digit,
    point or minus before it; where it ends with a digit, no digit or decimals after it."""
    before = r"(?<![\d.\-])" if re.match(r"[\d.\-]", value) else ""
    after = r"(?!\d|\.\d|-\d)" if re.search(r"\d$", value) else ""
    return re.search(before + re.escape(value) + after, text) is not None
