"""The report's forest plots: per paper, each claim's effect with its 95% interval beside the paper's, coloured by verdict."""

from __future__ import annotations

from collections.abc import Sequence
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


def over(value: float, paper: float, ratio: bool) -> float:
    """A drawn effect over the paper's (``verdict.relative``), which ``drawn`` ensures there is."""
    shown = relative(value, paper, ratio)
    assert shown is not None
    return shown


def forest_plots(results: Sequence[ClaimResult]) -> list[Plot]:
    """One forest plot per paper (``reproduce-<paper>``), in the claims' order; a paper with nothing to draw has none."""
    papers: dict[str, list[ClaimResult]] = {}
    for result in drawn(results):
        papers.setdefault(result.claim.paper, []).append(result)
    with quiet_matplotlib():
        return [render(f"reproduce-{paper}", CAPTION, forest_figure(rows)) for paper, rows in papers.items()]


def forest_figure(rows: Sequence[ClaimResult]) -> Figure:
    """The forest plot of one paper's drawable results, first claim on top.

    Effects of different units share one axis as ours/paper (a ratio's as the log of ours over the log of the paper's,
    the scale the verdict rule judges it on): the paper's effect (or bound) is 1 on every row, the band from 1/3 to 3 is
    the verdict rule's magnitude, and 0 is no effect. The axis is symmetric-log (linear between -1 and 1), so an effect
    far off the paper's stays on it.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(8.5, 1.2 + 0.24 * len(rows)), dpi=100, layout="constrained")
    ax = fig.subplots()
    ax.axvspan(1 / MAGNITUDE, MAGNITUDE, color="#e8e8e8", zorder=0)
    ax.axvline(0, color="0.5", linewidth=0.8, zorder=1)
    for y, result in enumerate(rows):
        effect, paper = result.effect, result.paper
        assert effect is not None and paper  # drawn() keeps only these
        interval, colour = effect.interval(), COLOURS[result.verdict]
        left, mean, right = (over(v, paper, effect.ratio) for v in (interval.low, interval.mean, interval.high))
        ax.plot([left, right], [y, y], color=colour, linewidth=2, solid_capstyle="butt")
        ax.plot(mean, y, "o", color=colour, markersize=5)
        marker = {AT_LEAST: ">", AT_MOST: "<"}.get(result.claim.bound or "", "D")
        ax.plot(1, y, marker, color="black", markersize=5, fillstyle="none")
    ax.set_xscale("symlog", linthresh=1)
    low, high = ax.get_xlim()
    ticks = [t for t in TICKS if low <= t <= high]
    ax.set_xticks(ticks, [TICK_LABELS.get(t, f"{t:g}") for t in ticks])
    ax.minorticks_off()
    ax.set_yticks(range(len(rows)), [f"{r.claim.label} ({r.verdict})" for r in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("our effect / the paper's (symmetric log)")
    ax.grid(axis="x", alpha=0.3)
    handles = [Line2D([], [], color=c, linewidth=2, label=v) for v, c in COLOURS.items()]
    handles.append(Line2D([], [], marker="D", color="black", fillstyle="none", linestyle="none", label="the paper's"))
    fig.legend(handles=handles, fontsize=7, loc="outside lower center", ncol=6)
    fig.suptitle(f"{rows[0].claim.title}: {len(rows)} claims, ours against the paper's effect")
    return fig
