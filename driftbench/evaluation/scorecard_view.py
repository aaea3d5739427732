"""The leaderboard's drift scorecard: per trace a table of the methods' scorecards (means over seeds) and matrix heatmaps."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from driftbench.evaluation.comparison import method_label
from driftbench.evaluation.html_page import Image, Section
from driftbench.evaluation.plots import Plot, quiet_matplotlib, render
from driftbench.record.runs import RunRecord
from driftbench.record.schema import Summary
from driftbench.record.scorecard import DETECTION_WINDOW, REACTION_KINDS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MATRIX_CAPTION = (
    "Segment accuracy matrix per method, mean over seeds: row i, the models at the end of segment i; column j, "
    "the clients' test data of segment j (segments start at round 0 and at each drift event); blank: no value."
)
PANELS_PER_ROW = 4
COLOURS = "viridis"
ANNOTATE_UP_TO = 6  # segments; larger matrices are drawn without numbers
DRIFT_GLOSSARY = {  # table header -> its meaning (docs/scorecard.md has the formulas)
    "in-segment": "mean over segments i of A[i, i], the models at the end of a segment on its own test data; mean over seeds",
    "next segment": "mean over i of A[i, i+1], the models at the end of a segment on the next one's data (before training "
    "on it); mean over seeds",
    "worst next": "the lowest A[i, i+1], mean over seeds",
    "BWT": "backward transfer, mean over j < T-1 of A[T-1, j] - A[j, j] (negative: the final models lost accuracy on "
    "earlier segments); mean over seeds",
    "forgetting": "mean over j < T-1 of the best earlier A[l, j] (l < T-1) less A[T-1, j]; mean over seeds",
    "prequential": "each round, each participant's model scored on the batch it is about to train on, before training; "
    "mean over rounds and seeds",
    "detected": "drift events some reaction answered within the window / events, summed over seeds",
    "delay": "rounds from an event to the first reaction within the window touching a drifted client; mean over "
    "detected events and seeds",
    "client delay": "the same per drifted client reached; mean over reached clients and seeds",
    "false alarms": "reactions that answered no event (none in the window touching their clients), per run",
    "reactions": "method events that change who trains which model ("
    + ", ".join(REACTION_KINDS)
    + f") after round 0, per run; the window: {DETECTION_WINDOW} rounds from an event, its round included",
}


def drift_rows(methods: list[tuple[str, bool]], records: list[RunRecord]) -> pd.DataFrame:
    """Each method's scorecard numbers over its complete runs, methods in the given (name, oracle) order."""
    rows = []
    for method, oracle in methods:
        summaries = [r.summary for r in records if r.method == method and r.summary is not None]
        if not summaries:
            continue
        cards = [s.scorecard for s in summaries]
        detections = [c.detection for c in cards]
        rows.append(
            {
                "method": method,
                "oracle": oracle,
                "seeds": len(cards),
                "in_segment_accuracy": _mean(c.in_segment_accuracy for c in cards),
                "next_segment_accuracy": _mean(c.next_segment_accuracy for c in cards),
                "next_segment_worst": _mean(c.next_segment_worst for c in cards),
                "backward_transfer": _mean(c.backward_transfer for c in cards),
                "forgetting": _mean(c.forgetting for c in cards),
                "prequential_accuracy": _mean(c.prequential_accuracy for c in cards),
                "detected": sum(d.detected for d in detections),
                "events": sum(len(d.events) for d in detections),
                "detection_delay": _mean(d.delay_mean for d in detections),
                "client_detection_delay": _mean(d.client_delay_mean for d in detections),
                "false_alarms": _mean(d.false_alarms for d in detections),
                "reactions": _mean(d.reactions for d in detections),
            }
        )
    return pd.DataFrame(rows)


def drift_display(rows: pd.DataFrame) -> list[dict[str, str]]:
    """The drift table as text cells under the ``DRIFT_GLOSSARY`` headers."""
    return [
        {
            "method": method_label(row["method"], row["oracle"], False),
            "seeds": str(row["seeds"]),
            "in-segment": _num(row["in_segment_accuracy"], "{:.3f}"),
            "next segment": _num(row["next_segment_accuracy"], "{:.3f}"),
            "worst next": _num(row["next_segment_worst"], "{:.3f}"),
            "BWT": _num(row["backward_transfer"], "{:+.3f}"),
            "forgetting": _num(row["forgetting"], "{:.3f}"),
            "prequential": _num(row["prequential_accuracy"], "{:.3f}"),
            "detected": f"{row['detected']}/{row['events']}" if row["events"] else "no events",
            "delay": _num(row["detection_delay"], "{:.1f}"),
            "client delay": _num(row["client_detection_delay"], "{:.1f}"),
            "false alarms": _num(row["false_alarms"], "{:.3g}"),
            "reactions": _num(row["reactions"], "{:.3g}"),
        }
        for row in rows.to_dict("records")
    ]


def mean_matrices(methods: list[str], records: list[RunRecord]) -> dict[str, np.ndarray]:
    """Each method's accuracy matrix, mean over its complete runs (NaN where no run has a value)."""
    out = {}
    for method in methods:
        summaries = [r.summary for r in records if r.method == method and r.summary is not None]
        if summaries:
            stack = np.stack([_square(s) for s in summaries])
            counts = (~np.isnan(stack)).sum(axis=0)
            out[method] = np.where(counts > 0, np.nansum(stack, axis=0) / np.maximum(counts, 1), np.nan)
    return out


@dataclass(frozen=True)
class DriftBoard:
    """One trace's drift scorecard: the methods' numbers and the heatmap plot (None without complete runs)."""

    trace: str
    rows: pd.DataFrame
    heatmap: Plot | None

    @property
    def section(self) -> Section:
        """The page's drift-scorecard section: the table, the heatmaps and what each column means."""
        heatmaps = [Image(self.heatmap.caption, self.heatmap.png, f"{self.heatmap.name}.svg")] if self.heatmap else []
        return Section(
            f"{self.trace}: drift scorecard",
            subtitle="Segment accuracy matrix, prequential accuracy and drift detection (docs: Scorecard).",
            rows=drift_display(self.rows),
            images=heatmaps,
            facts=DRIFT_GLOSSARY,
        )


def drift_board(trace: str, methods: list[tuple[str, bool]], records: list[RunRecord]) -> DriftBoard:
    """The drift scorecard of one trace's runs, methods in the given (name, oracle) order."""
    rows = drift_rows(methods, records)
    return DriftBoard(trace, rows, matrix_plot(trace, mean_matrices([m for m, _ in methods], records)))


def matrix_plot(trace: str, matrices: dict[str, np.ndarray]) -> Plot | None:
    """The heatmaps of ``matrices`` as one plot, ``<trace>-matrix``; None without any."""
    if not matrices:
        return None
    with quiet_matplotlib():
        return render(f"{trace}-matrix", MATRIX_CAPTION, matrix_figure(trace, matrices))


def matrix_figure(trace: str, matrices: dict[str, np.ndarray]) -> Figure:
    """One heatmap panel per method on a shared [0, 1] colour scale."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    columns = min(PANELS_PER_ROW, len(matrices))
    lines = math.ceil(len(matrices) / columns)
    fig = Figure(figsize=(2.4 * columns + 1.0, 2.4 * lines + 0.5), dpi=100, layout="constrained")
    axes = fig.subplots(lines, columns, squeeze=False).ravel()
    for ax, (method, matrix) in zip(axes, matrices.items()):
        ax.imshow(matrix, vmin=0.0, vmax=1.0, cmap=COLOURS)
        ax.set_title(method, fontsize=8)
        ax.set(xlabel="on segment", ylabel="after segment")
        ax.set_xticks(range(matrix.shape[1]))
        ax.set_yticks(range(matrix.shape[0]))
        if matrix.shape[1] <= ANNOTATE_UP_TO:
            for (i, j), value in np.ndenumerate(matrix):
                if not np.isnan(value):
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color="w" if value < 0.6 else "k")
    for ax in axes[len(matrices) :]:
        ax.set_axis_off()
    fig.colorbar(ScalarMappable(Normalize(0.0, 1.0), COLOURS), ax=list(axes), shrink=0.8, label="accuracy")
    fig.suptitle(f"{trace}: segment accuracy matrix")
    return fig


def _square(summary: Summary) -> np.ndarray:
    """A run's matrix with one row per segment (NaN rows for segments a diverged run did not finish)."""
    card = summary.scorecard
    size = len(card.segment_starts)
    matrix = np.full((size, size), np.nan)
    for i, row in enumerate(card.accuracy_matrix):
        matrix[i] = [np.nan if v is None else v for v in row]
    return matrix


def _mean(values: Any) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def _num(value: Any, fmt: str) -> str:
    return "-" if value is None or pd.isna(value) else fmt.format(value)
