"""The matrix's figures as PNG: the heatmap of the share of the oracle's room (methods x traces grouped by kind of drift,
drawn from the cells' table alone) and a group's critical-difference diagram (autorank's)."""

from __future__ import annotations

import io
from collections.abc import Callable
from itertools import groupby
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import pandas as pd

from driftbench.evaluation.matrix.cells import CONTAINS_ZERO, ORACLE, ROOM_MEAN, no_room, room_frame
from driftbench.evaluation.matrix.ranking import Ranking, autorank_module
from driftbench.evaluation.plots import quiet_matplotlib
from driftbench.record.summarize import REFERENCE

if TYPE_CHECKING:
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure

HEATMAP_CAPTION = (
    "Share of the oracle's room, (method - fedavg) / (oracle - fedavg) in final accuracy over the seeds where all three "
    "ran: 0 is FedAvg, 1 the oracle; red below FedAvg, blue above (colours clipped to [-1, 1]); ≈: its 95% set "
    "contains 0 (not distinguishable from FedAvg); grey: no share (not run: no run yet; no room: the oracle does not "
    "beat FedAvg on that trace; n/a: no FedAvg and oracle runs beside it)."
)
CD_CAPTION = (
    "Critical-difference diagram: mean ranks in final accuracy (1 is best); methods joined by a bar are not separated "
    "by Nemenyi's test at the 5% level (CD: the critical difference)."
)
COLOURS = "RdBu"
DPI = 110


def png_writer(draw: Callable[[], Figure]) -> Callable[[BinaryIO], None]:
    """A function writing the figure ``draw`` makes as PNG (no timestamps) to a file, for ``pages.render.Picture``."""

    def write(fh: BinaryIO) -> None:
        with quiet_matplotlib():
            draw().savefig(fh, format="png", dpi=DPI, metadata={"Software": None})

    return write


def heatmap_png(cells: pd.DataFrame) -> bytes:
    """The heatmap of ``cells`` as PNG bytes (for the leaderboard's page)."""
    buffer = io.BytesIO()
    png_writer(lambda: heatmap_figure(cells))(buffer)
    return buffer.getvalue()


def heatmap_figure(cells: pd.DataFrame) -> Figure:
    """Methods (rows) x traces (columns, grouped by kind of drift), coloured and annotated by the share of the room."""
    from matplotlib.figure import Figure

    shares = room_frame(cells)
    cells = cells.set_index(["method", "trace"])
    fig = Figure(figsize=(2.2 + 0.62 * shares.shape[1], 1.4 + 0.3 * shares.shape[0]), dpi=100, layout="constrained")
    ax = fig.subplots()
    palette = colour_map()
    image = ax.imshow(np.ma.masked_invalid(shares.to_numpy()), cmap=palette, vmin=-1.0, vmax=1.0, aspect="auto")
    for (i, method), (j, trace) in ((m, t) for m in enumerate(shares.index) for t in enumerate(shares.columns)):
        value = shares.iloc[i, j]
        text, dark = annotation(cells.loc[(method, trace)], method, value)
        ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_xticks(range(shares.shape[1]), list(shares.columns), rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(shares.shape[0]), list(shares.index), fontsize=8)
    kinds = [cells.loc[(shares.index[0], trace), "drift"] for trace in shares.columns]
    start = 0
    top = ax.secondary_xaxis("top")
    centres, names = [], []
    for kind, members in groupby(kinds):
        width = len(list(members))
        centres.append(start + (width - 1) / 2)
        names.append(kind)
        if start:
            ax.axvline(start - 0.5, color="black", linewidth=1.2)
        start += width
    top.set_xticks(centres, names, fontsize=8)
    top.tick_params(length=0)
    fig.colorbar(image, ax=ax, shrink=0.6, label="share of the oracle's room")
    return fig


def colour_map() -> Colormap:
    """The heatmap's colour map, grey where a cell has no share."""
    from matplotlib import colormaps

    palette = colormaps[COLOURS].copy()
    palette.set_bad("#d9d9d9")
    return palette


def annotation(cell: pd.Series, method: str, value: float) -> tuple[str, bool]:
    """A heatmap cell's text and whether it sits on a dark colour; FedAvg's 0 and the oracle's 1 are exact."""
    if not np.isfinite(value):
        return ("not run" if cell["status"] == "not run" else "no room" if no_room(cell[ROOM_MEAN]) else "n/a"), False
    unsure = "≈" if method not in (REFERENCE, ORACLE) and cell[CONTAINS_ZERO] else ""
    return f"{unsure}{value:.2f}", abs(value) > 0.6


def cd_figure(ranking: Ranking) -> Figure:
    """The group's critical-difference diagram (``Ranking.diagram``: Friedman's test found a difference), drawn by autorank
    into a figure of its own."""
    from matplotlib.figure import Figure

    methods = len(ranking.table)
    fig = Figure(figsize=(7.0, 1.2 + 0.16 * methods), dpi=100)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    autorank_module().plot_stats(ranking.result, ax=ax)
    return fig
