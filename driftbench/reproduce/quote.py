"""A diagnosis's quote of the report's runs (``Quote``): where its numbers come from, and how they are written."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from driftbench.reproduce.claim import UNITS
from driftbench.reproduce.metrics import metric_names

# each: the per-seed values joined by ", "; range: "min-max" (one value where they agree); mean; min; max
FORMS = ("each", "range", "mean", "min", "max")
SUMMARY_FIELDS = ("ari_final", "partition_changes", "rounds", "sim_seconds", "wall_seconds")  # summary.json, beside METRICS
NEEDS_ANOTHER_RUN = ("tta_speedup", "delta_permille_stable")  # claim metrics read against a target or twin run
MAX_DIGITS = 6


def quote_metrics() -> list[str]:
    """Every metric a quote may read: the claim metrics that read one run, then summary fields no claim compares."""
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

    @property
    def scale(self) -> float:
        """The factor from the metric's scale to the quote's unit."""
        return UNITS[self.unit] if self.unit else 1.0

    def describe(self) -> str:
        """What the quote reads, in words: ``final_accuracy of flhc less cflgt in points, mean at seeds 0, 1 in ...``."""
        less = f" less {self.versus}" if self.versus else ""
        unit = f" in {self.unit}" if self.unit else ""
        runs = f"claim {self.claim}'s runs" if self.claim else f"{self.trace} with {dict(self.sets) or 'its defaults'}"
        return f"{self.metric} of {self.method}{less}{unit}, {self.form} at seeds {', '.join(map(str, self.seeds))} in {runs}"


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
    statistic = array.mean() if form == "mean" else array.min() if form == "min" else array.max()
    return number(float(statistic))


def holds(text: str, value: str) -> bool:
    """Whether ``text`` holds ``value`` as a whole: no digit, point or minus before it, no digit or decimals after it."""
    return re.search(rf"(?<![\d.\-]){re.escape(value)}(?!\d|\.\d|-\d)", text) is not None
