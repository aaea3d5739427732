"""The matrix report of any runs folder or archive: matrix.md, the heatmap (PNG and its CSV), the ranking (CSV and
critical-difference diagrams), written into a folder (``matrix_report``); ``MatrixParts`` is what the docs page renders
from the same pieces."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from driftbench.atomic import atomic_write
from driftbench.evaluation.leaderboard.write import markdown_table
from driftbench.evaluation.matrix.cells import UNCLASSIFIED, Grid, Matrix, read_matrix
from driftbench.evaluation.matrix.figures import CD_CAPTION, HEATMAP_CAPTION, cd_figure, heatmap_figure, png_writer
from driftbench.evaluation.matrix.ranking import Ranking, ranking_frame, rankings
from driftbench.evaluation.matrix.text import (
    cell_rows,
    glossary_markdown,
    kinds_text,
    ranking_markdown,
    room_table,
    source_text,
    trace_kinds,
)
from driftbench.traces.catalog import DRIFT_KINDS

CELLS_CSV, RANKING_CSV, HEATMAP_PNG, REPORT_MD = "matrix.csv", "matrix-ranking.csv", "matrix-heatmap.png", "matrix.md"
DIGITS = "%.6g"  # the CSVs' numbers: what a page quotes, the same on every platform


def diagram_name(group: str) -> str:
    """The file name of a group's critical-difference diagram."""
    return f"matrix-cd-{group}.png"


@dataclass(frozen=True)
class MatrixParts:
    """A matrix read and ranked, with its CSV texts and the writers of its figures."""

    matrix: Matrix
    rankings: list[Ranking]

    @property
    def cells_csv(self) -> str:
        """The cells' table as CSV: the heatmap's data and every cell's numbers."""
        return str(self.matrix.cells.to_csv(index=False, float_format=DIGITS, lineterminator="\n"))

    @property
    def ranking_csv(self) -> str:
        """Every group's ranking as CSV."""
        return str(ranking_frame(self.rankings).to_csv(index=False, float_format=DIGITS, lineterminator="\n"))

    def heatmap(self) -> Callable[[BinaryIO], None]:
        """The heatmap's PNG writer, drawn from ``cells_csv`` alone."""
        text = self.cells_csv
        return png_writer(lambda: heatmap_figure(pd.read_csv(io.StringIO(text), keep_default_na=True)))

    def diagrams(self) -> dict[str, Callable[[BinaryIO], None]]:
        """Each group with a critical-difference diagram: its PNG writer."""
        return {r.group: png_writer(functools.partial(cd_figure, r)) for r in self.rankings if r.diagram}


def matrix_parts(root: Path, grid: Grid | None = None) -> MatrixParts:
    """The matrix of the runs under ``root`` (a runs folder or an archive) over ``grid``, ranked per kind of drift."""
    matrix = read_matrix(root, grid)
    kinds = [k for k in [*DRIFT_KINDS, UNCLASSIFIED] if k in set(matrix.cells["drift"])]
    return MatrixParts(matrix, rankings(matrix.runs, kinds))


def matrix_report(archive: Path, out: Path, grid: Grid | None = None) -> list[Path]:
    """Write the matrix of ``archive`` (an archive or a runs folder) into the folder ``out``; return the paths written.

    matrix.md, matrix-heatmap.png and its data matrix.csv, matrix-ranking.csv and a critical-difference
    diagram per ranked group (``matrix-cd-<group>.png``). ``grid`` names cells expected beyond those
    found (a suite's), so that the report says which have no run yet.
    """
    parts = matrix_parts(Path(archive), grid)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Callable[[BinaryIO], None]] = {
        REPORT_MD: text_writer(report_markdown(parts, str(archive), lambda r: diagram_name(r.group) if r.diagram else None)),
        CELLS_CSV: text_writer(parts.cells_csv),
        RANKING_CSV: text_writer(parts.ranking_csv),
        HEATMAP_PNG: parts.heatmap(),
        **{diagram_name(group): draw for group, draw in parts.diagrams().items()},
    }
    for name, write in written.items():
        atomic_write(out / name, write)
    return [out / name for name in written]


def text_writer(text: str) -> Callable[[BinaryIO], None]:
    """A function writing ``text`` as UTF-8 to a file."""

    def write(fh: BinaryIO) -> None:
        fh.write(text.encode("utf-8"))

    return write


def report_markdown(parts: MatrixParts, where: str, image: Callable[[Ranking], str | None]) -> str:
    """matrix.md: the source, the kinds of drift, the heatmap and share table, the rankings, every cell, the glossary."""
    cells = parts.matrix.cells
    sections = [
        "# Drift matrix",
        source_text(parts.matrix, where),
        "## Kinds of drift",
        kinds_text(trace_kinds(cells)),
        "## Share of the oracle's room",
        f"![share of the oracle's room]({HEATMAP_PNG})\n\n*{HEATMAP_CAPTION}* Data: [{CELLS_CSV}]({CELLS_CSV}).",
        room_table(cells),
        "## Ranking",
        f"{CD_CAPTION} Data: [{RANKING_CSV}]({RANKING_CSV}).",
        ranking_markdown(parts.rankings, image),
        "## Cells",
        markdown_table(cell_rows(cells)),
        "## Glossary",
        glossary_markdown(),
    ]
    return "\n\n".join(s.strip("\n") for s in sections) + "\n"
