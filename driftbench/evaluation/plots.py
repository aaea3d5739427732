"""Leaderboard plots, each rendered as PNG and SVG.

Rounds are the shared x axis: drift events are grey dashed lines across all curves, and a
method's global re-clusterings (``recluster_global`` in its events.csv) are star markers on
its curves. A curve is the mean over a method's seeds, shaded from the minimum to the
maximum over seeds. Each method keeps one colour, line style and marker in every plot, so
curves that coincide stay visible. Simulated time is a second view of accuracy; a summary
chart sets final accuracy against overhead. The figure builders return the figure, unrendered.
"""

from __future__ import annotations

import io
import logging
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from driftbench.errors import ConfigError
from driftbench.record.runs import RunRecord
from driftbench.record.summarize import REFERENCE

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

SEED_SPREAD = "shaded: min-max over seeds"
MARKS = "grey dashed lines: drift events; stars: global re-clusterings"
CAPTIONS = {  # plot kind (the file name's suffix) -> caption
    "accuracy": f"Mean client accuracy by round, mean over seeds; {SEED_SPREAD}; {MARKS}.",
    "clients": f"Accuracy by round per method, mean over seeds; shaded: p10-p90 of client accuracy; {MARKS}.",
    "accuracy-time": f"Mean client accuracy against simulated seconds, both means over seeds; {SEED_SPREAD}; "
    "triangles: drift events; stars: global re-clusterings.",
    "clusters": f"Number of clusters (models) by round, mean over seeds; {SEED_SPREAD}; {MARKS}.",
    "ari": f"Adjusted Rand index against the ground truth, at rounds with >= 2 ground-truth groups; {SEED_SPREAD}; {MARKS}.",
    "summary": f"Final accuracy (mean +/- std over seeds) against overhead per run; dotted lines: {REFERENCE} and the oracle; "
    "symmetric-log x axes (linear near 0).",
}
STAT_COLUMNS = ["sim_seconds", "accuracy_mean", "accuracy_p10", "accuracy_p90", "ari", "n_clusters"]
LINESTYLES = ["-", "--", "-.", ":"]
MARKERS = ["o", "s", "^", "D", "P", "X", "h", "<", ">", "p"]  # "*" marks re-clusterings, "v" drift events
RECLUSTER = "recluster_global"
MARKS_PER_CURVE = 8


@dataclass(frozen=True)
class Style:
    """How one method is drawn in every plot."""

    color: Any
    linestyle: str
    marker: str
    index: int  # the method's position; its markers are offset by index / methods of their spacing,
    methods: int  # so that the markers of coinciding curves do not hide each other


@dataclass(frozen=True)
class MethodRuns:
    """One method's complete runs on a trace: per evaluated round, each statistic over seeds; re-clustering rounds."""

    method: str
    seeds: int
    stats: pd.DataFrame  # "round" and, for each of STAT_COLUMNS, <column>_mean, _min and _max over seeds
    reclusters: list[int]  # distinct rounds at which any seed re-clustered globally

    @property
    def label(self) -> str:
        """The method and its number of seeds, for legends."""
        return f"{self.method} ({self.seeds} seed{'s' if self.seeds != 1 else ''})"

    def column(self, name: str) -> pd.DataFrame:
        """Round, mean, min and max of one statistic, at the rounds where it is defined."""
        table = self.stats[["round", f"{name}_mean", f"{name}_min", f"{name}_max"]]
        return table.set_axis(["round", "mean", "min", "max"], axis=1).dropna()


@dataclass(frozen=True)
class Plot:
    """One rendered plot: its file stem, caption, and the PNG and SVG bytes."""

    name: str
    caption: str
    png: bytes
    svg: bytes

    @property
    def files(self) -> dict[str, bytes]:
        """File name -> content, ``<name>.png`` and ``<name>.svg``."""
        return {f"{self.name}.png": self.png, f"{self.name}.svg": self.svg}


def method_runs(method: str, done: list[RunRecord]) -> MethodRuns:
    """One method's complete runs (at least one): rounds.csv statistics over seeds and the rounds of its global re-clusterings."""
    reclusters: set[int] = set()
    for record in done:
        events = record.events()
        reclusters.update(int(r) for r in events.loc[events["kind"] == RECLUSTER, "round"])
    return MethodRuns(method, len(done), seed_stats([r.rounds() for r in done]), sorted(reclusters))


def seed_stats(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Per evaluated round of rounds.csv tables (one per seed): each of ``STAT_COLUMNS``' mean, min and max over seeds."""
    stats = pd.concat(tables).groupby("round")[STAT_COLUMNS].agg(["mean", "min", "max"])
    stats.columns = stats.columns.map("_".join)
    return stats.reset_index()


def trace_plots(trace: str, runs: list[MethodRuns], events: list[int], rows: pd.DataFrame) -> list[Plot]:
    """Every plot of one trace, methods in the given order; ``rows`` are the leaderboard's numbers for the summary chart."""
    with quiet_matplotlib():
        styles = method_styles([r.method for r in runs])
        figures = {
            "accuracy": accuracy_figure(trace, runs, events, styles),
            "clients": clients_figure(trace, runs, events, styles),
            "accuracy-time": accuracy_time_figure(trace, runs, events, styles),
            "clusters": clusters_figure(trace, runs, events, styles),
            "ari": ari_figure(trace, runs, events, styles),
            "summary": summary_figure(trace, rows, styles),
        }
        return [render(f"{trace}-{kind}", CAPTIONS[kind], fig) for kind, fig in figures.items() if fig is not None]


def accuracy_figure(trace: str, runs: list[MethodRuns], events: list[int], styles: dict[str, Style]) -> Figure:
    """Mean client accuracy by round, one curve per method with its band over seeds."""
    fig, ax = _figure()
    for run in runs:
        _curve(ax, run, run.column("accuracy_mean"), styles[run.method])
    _round_axis(ax, runs, events)
    ax.set(title=f"{trace}: accuracy by round", ylabel="mean client accuracy")
    return _finish(fig, ax)


def clients_figure(trace: str, runs: list[MethodRuns], events: list[int], styles: dict[str, Style]) -> Figure:
    """One panel per method: mean client accuracy by round with the p10-p90 band over clients."""
    fig = _new_figure(height=2.4 * math.ceil(len(runs) / 3) + 0.6)
    axes = fig.subplots(math.ceil(len(runs) / 3), min(len(runs), 3), sharex=True, sharey=True, squeeze=False)
    for ax, run in zip(axes.ravel(), runs):
        style = styles[run.method]
        mean = run.column("accuracy_mean")
        low, high = run.column("accuracy_p10"), run.column("accuracy_p90")
        ax.fill_between(low["round"], low["mean"], high["mean"], color=style.color, alpha=0.2, linewidth=0)
        _line(ax, mean["round"], mean["mean"], run.method, style)
        _reclusters(ax, run, mean, style)
        _round_axis(ax, runs, events)
        ax.set_title(run.method, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(runs) :]:
        ax.set_visible(False)
    fig.suptitle(f"{trace}: accuracy over clients (p10-p90)")
    fig.supylabel("client accuracy")
    return fig


def accuracy_time_figure(trace: str, runs: list[MethodRuns], events: list[int], styles: dict[str, Style]) -> Figure:
    """Mean client accuracy against simulated seconds; drift events as triangles on each curve."""
    fig, ax = _figure()
    for run in runs:
        style = styles[run.method]
        accuracy, seconds = run.column("accuracy_mean"), run.column("sim_seconds")
        ax.fill_between(seconds["mean"], accuracy["min"], accuracy["max"], color=style.color, alpha=0.15, linewidth=0)
        _line(ax, seconds["mean"], accuracy["mean"], run.label, style)
        at = [r for r in events if accuracy["round"].iloc[0] <= r <= accuracy["round"].iloc[-1]]
        if at:
            x, y = _at_rounds(seconds, at), _at_rounds(accuracy, at)
            ax.plot(
                x, y, "v", color=style.color, markeredgecolor="0.2", markersize=7, linestyle="none", gid=f"drifts-on-{run.method}"
            )
        _star(ax, _at_rounds(seconds, run.reclusters), _at_rounds(accuracy, run.reclusters), run.method, style)
    if events:
        ax.plot([], [], "v", color="0.6", markeredgecolor="0.2", linestyle="none", label="drift event")
    ax.set(title=f"{trace}: accuracy by simulated time", xlabel="simulated time (s)", ylabel="mean client accuracy")
    return _finish(fig, ax)


def clusters_figure(trace: str, runs: list[MethodRuns], events: list[int], styles: dict[str, Style]) -> Figure:
    """Number of clusters (models) by round."""
    from matplotlib.ticker import MaxNLocator

    fig, ax = _figure()
    for run in runs:
        _curve(ax, run, run.column("n_clusters"), styles[run.method], steps=True)
    _round_axis(ax, runs, events)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(title=f"{trace}: clusters by round", ylabel="clusters (models)")
    return _finish(fig, ax)


def ari_figure(trace: str, runs: list[MethodRuns], events: list[int], styles: dict[str, Style]) -> Figure | None:
    """ARI by round on a fixed [-0.1, 1] axis; None when no run has an ARI."""
    with_ari = [r for r in runs if len(r.column("ari"))]
    if not with_ari:
        return None
    fig, ax = _figure()
    for run in with_ari:
        _curve(ax, run, run.column("ari"), styles[run.method], clip=False)  # ARI 1 lies on the axis' top edge
    _round_axis(ax, runs, events)
    ax.set_ylim(-0.1, 1.0)
    ax.set(title=f"{trace}: clustering vs ground truth", ylabel="adjusted Rand index")
    return _finish(fig, ax)


def summary_figure(trace: str, rows: pd.DataFrame, styles: dict[str, Style]) -> Figure | None:
    """Final accuracy +/- std against extra MB and cluster seconds; the reference and oracles as horizontal lines."""
    done = rows[rows["final_accuracy_mean"].notna()]
    if done.empty:
        return None
    fig = _new_figure(height=3.8)
    axes = fig.subplots(1, 2, sharey=True)
    costs = {"extra MB per run": done["overhead_bytes"] / 1e6, "cluster seconds per run (simulated)": done["cluster_seconds"]}
    for ax, (label, cost) in zip(axes, costs.items()):
        for (_, row), x in zip(done.iterrows(), cost):
            style = styles[row["method"]]
            if row["oracle"] or row["method"] == REFERENCE:
                ax.axhline(row["final_accuracy_mean"], color=style.color, linestyle=":", linewidth=1.2, label=row["method"])
                continue
            std = row["final_accuracy_std"]
            ax.errorbar(
                x,
                row["final_accuracy_mean"],
                yerr=None if pd.isna(std) else std,
                fmt=style.marker,
                color=style.color,
                capsize=3,
                label=row["method"],
            )
            ax.annotate(row["method"], (x, row["final_accuracy_mean"]), textcoords="offset points", xytext=(5, 4), fontsize=7)
        _symlog(ax, cost)
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("final accuracy")
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.suptitle(f"{trace}: accuracy against overhead")
    return fig


def method_styles(methods: list[str]) -> dict[str, Style]:
    """A distinct colour, line style and marker per method, in the given order."""
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    return {
        m: Style(palette(i % palette.N), LINESTYLES[i % len(LINESTYLES)], MARKERS[i % len(MARKERS)], i, len(methods))
        for i, m in enumerate(methods)
    }


def render(name: str, caption: str, fig: Figure) -> Plot:
    """The figure as PNG and SVG bytes (no timestamps, so equal figures give equal files)."""
    png, svg = io.BytesIO(), io.BytesIO()
    with quiet_matplotlib():
        fig.savefig(png, format="png", dpi=110, metadata={"Software": None})
        fig.set_layout_engine("none")  # keep the layout the PNG settled rather than solving it again
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    return Plot(name, caption, png.getvalue(), svg.getvalue())


@contextmanager
def quiet_matplotlib() -> Iterator[None]:
    """Keep matplotlib's font-cache and font-manager messages and warnings off the terminal; fixed SVG ids."""
    logging.getLogger("matplotlib").setLevel(logging.ERROR)  # before the first import: the font cache builds then
    try:
        from matplotlib import rc_context
    except ImportError:
        raise ConfigError("leaderboard plots need matplotlib: pip install 'driftbench[plots]'") from None
    with warnings.catch_warnings(), rc_context({"svg.hashsalt": "driftbench", "font.size": 9}):
        warnings.simplefilter("ignore")
        yield


def _new_figure(height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(8.5, height), dpi=100, layout="constrained")


def _figure() -> tuple[Figure, Axes]:
    fig = _new_figure(height=4.2)
    return fig, fig.subplots()


def _finish(fig: Figure, ax: Axes) -> Figure:
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def _line(ax: Axes, x: Any, y: Any, label: str, style: Style, **options: Any) -> None:
    step = max(style.methods, len(x) // MARKS_PER_CURVE)
    ax.plot(
        x,
        y,
        label=label,
        color=style.color,
        linestyle=style.linestyle,
        marker=style.marker,
        markersize=4,
        markevery=(style.index * step // style.methods, step),
        linewidth=1.4,
        **options,
    )


def _curve(ax: Axes, run: MethodRuns, stat: pd.DataFrame, style: Style, steps: bool = False, clip: bool = True) -> None:
    """A method's mean over seeds with its min-max band and its re-clustering stars."""
    ax.fill_between(
        stat["round"], stat["min"], stat["max"], color=style.color, alpha=0.15, linewidth=0, step="post" if steps else None
    )
    _line(ax, stat["round"], stat["mean"], run.label, style, drawstyle="steps-post" if steps else "default", clip_on=clip)
    _reclusters(ax, run, stat, style)


def _reclusters(ax: Axes, run: MethodRuns, stat: pd.DataFrame, style: Style) -> None:
    _star(ax, run.reclusters, _at_rounds(stat, run.reclusters), run.method, style)


def _star(ax: Axes, x: Any, y: Any, method: str, style: Style) -> None:
    """Stars at a method's global re-clusterings (a legend entry only where there are some)."""
    if len(x):
        ax.plot(
            x,
            y,
            "*",
            color=style.color,
            markeredgecolor="black",
            markersize=11,
            linestyle="none",
            label=f"{method}: global re-clustering",
            gid=f"recluster-{method}",
            clip_on=False,
        )


def _at_rounds(stat: pd.DataFrame, rounds: list[int]) -> np.ndarray:
    """The mean curve's value at each of ``rounds``, interpolated between evaluations."""
    return np.asarray(np.interp(rounds, stat["round"], stat["mean"]), dtype=float)


def _round_axis(ax: Axes, runs: list[MethodRuns], events: list[int]) -> None:
    """Rounds on the x axis, over every run's evaluations (the same range in every plot), with a line at each drift event."""
    ax.set_xlim(min(r.stats["round"].min() for r in runs), max(r.stats["round"].max() for r in runs))
    ax.set_xlabel("round")
    for i, event in enumerate(sorted(set(events))):
        ax.axvline(
            event, color="0.45", linestyle="--", linewidth=0.9, label=None if i else "drift event", gid=f"drift-event-{event}"
        )


def _symlog(ax: Axes, values: pd.Series) -> None:
    """A symmetric-log x axis from 0 to the decade above the largest value, linear below the smallest positive value's decade."""
    positive = values[values > 0]
    if len(positive):
        linthresh = 10.0 ** math.floor(math.log10(positive.min()))
        ax.set_xscale("symlog", linthresh=linthresh)
        ax.set_xlim(-linthresh / 2, 10.0 ** (math.floor(math.log10(positive.max())) + 1))
