"""The report's forest plots: per paper, each claim's effect with its 95% interval beside the paper's, coloured by verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from driftbench.evaluation.plots import Plot, quiet_matplotlib, render
from driftbench.reproduce.judging import ClaimResult
from driftbench.reproduce.verdict import (
    AT_LEAST,
    AT_MOST,
    DIRECTION_ONLY,
    INCONCLUSIVE,
    INVALID_PREMISE,
    MAGNITUDE,
    NOT_REPRODUCED,
    REPRODUCED,
    relative,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLOURS = {  # verdict -> colour (colour-blind safe: Okabe-Ito)
    REPRODUCED: "#009E73",
    DIRECTION_ONLY: "#56B4E9",
    NOT_REPRODUCED: "#D55E00",
    INCONCLUSIVE: "#999999",
    INVALID_PREMISE: "#CC79A7",
}
TICKS = (-1000, -100, -10, -3, -1, 0, 1 / MAGNITUDE, 1, MAGNITUDE, 10, 100, 1000)
TICK_LABELS = {1 / MAGNITUDE: "1/3"}
CAPTION = (
    "Each claim's effect as ours/paper (of the logs, for ratios): dot the mean over seeds, bar its 95% interval, "
    "diamond the paper's effect (triangles: a bound, at least or at most), shaded band 1/3 to 3 (the magnitude rule), "
    "grey line no effect; colour the verdict. Claims without a paper effect or a seed interval, or of one value "
    "(deterministic), are not drawn."
)


@dataclass(frozen=True)
class ForestRow:
    """One drawn claim: its label, verdict and bound, and our effect over the paper's (``verdict.relative``): the 95%
    interval's low end, the mean and the high end."""

    claim: str
    verdict: str
    bound: str  # "", or the paper's value as a bound (``verdict.BOUNDS``)
    low: float
    mean: float
    high: float


@dataclass(frozen=True)
class Forest:
    """A paper's forest plot as data: its file stem (``reproduce-<paper>``), the paper's title and the drawn rows."""

    name: str
    title: str
    rows: tuple[ForestRow, ...]


def drawn(results: Sequence[ClaimResult]) -> list[ClaimResult]:
    """The results a forest plot shows: a verdict with a colour, a paper effect to divide by and an interval of seeds."""
    return [
        r
        for r in results
        if r.verdict in COLOURS
        and r.effect is not None
        and relative(1.0 if r.effect.ratio else 0.0, r.paper, r.effect.ratio) is not None
        and len(r.effect.values) > 1
        and r.claim.kind != "driftbench"
    ]


def forest_row(result: ClaimResult) -> ForestRow:
    """A drawn result's row: its effect's interval over the paper's effect, which ``drawn`` ensures there is."""
    effect, paper = result.effect, result.paper
    assert effect is not None and paper is not None
    interval = effect.interval()
    low, mean, high = (relative(v, paper, effect.ratio) for v in (interval.low, interval.mean, interval.high))
    assert low is not None and mean is not None and high is not None
    return ForestRow(result.claim.label, result.verdict, result.claim.bound or "", low, mean, high)


def forests(results: Sequence[ClaimResult]) -> list[Forest]:
    """One forest per paper with anything to draw (``drawn``), in the claims' order."""
    papers: dict[str, list[ClaimResult]] = {}
    for result in drawn(results):
        papers.setdefault(result.claim.paper, []).append(result)
    return [
        Forest(f"reproduce-{paper}", shown[0].claim.title, tuple(forest_row(r) for r in shown)) for paper, shown in papers.items()
    ]


def forest_plots(results: Sequence[ClaimResult]) -> list[Plot]:
    """One forest plot per paper (``reproduce-<paper>``), in the claims' order; a paper with nothing to draw has none."""
    with quiet_matplotlib():
        return [render(forest.name, CAPTION, forest_figure(forest)) for forest in forests(results)]


def forest_figure(forest: Forest) -> Figure:
    """The forest plot of one paper's drawn rows, first claim on top.

    Effects of different units share one axis as ours/paper (a ratio's as the log of ours over the log of the paper's,
    the scale the verdict rule judges it on): the paper's effect (or bound) is 1 on every row, the band from 1/3 to 3 is
    the verdict rule's magnitude, and 0 is no effect. The axis is symmetric-log (linear between -1 and 1), so an effect
    far off the paper's stays on it.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    rows = forest.rows
    fig = Figure(figsize=(8.5, 1.2 + 0.24 * len(rows)), dpi=100, layout="constrained")
    ax = fig.subplots()
    ax.axvspan(1 / MAGNITUDE, MAGNITUDE, color="#e8e8e8", zorder=0)
    ax.axvline(0, color="0.5", linewidth=0.8, zorder=1)
    for y, row in enumerate(rows):
        colour = COLOURS[row.verdict]
        ax.plot([row.low, row.high], [y, y], color=colour, linewidth=2, solid_capstyle="butt")
        ax.plot(row.mean, y, "o", color=colour, markersize=5)
        marker = {AT_LEAST: ">", AT_MOST: "<"}.get(row.bound, "D")
        ax.plot(1, y, marker, color="black", markersize=5, fillstyle="none")
    ax.set_xscale("symlog", linthresh=1)
    low, high = ax.get_xlim()
    ticks = [t for t in TICKS if low <= t <= high]
    ax.set_xticks(ticks, [TICK_LABELS.get(t, f"{t:g}") for t in ticks])
    ax.minorticks_off()
    ax.set_yticks(range(len(rows)), [f"{r.claim} ({r.verdict})" for r in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("our effect / the paper's (symmetric log)")
    ax.grid(axis="x", alpha=0.3)
    handles = [Line2D([], [], color=c, linewidth=2, label=v) for v, c in COLOURS.items()]
    handles.append(Line2D([], [], marker="D", color="black", fillstyle="none", linestyle="none", label="the paper's"))
    fig.legend(handles=handles, fontsize=7, loc="outside lower center", ncol=6)
    fig.suptitle(f"{forest.title}: {len(rows)} claims, ours against the paper's effect")
    return fig
