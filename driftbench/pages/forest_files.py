"""A paper's forest plot as page files: its plotted rows as CSV, and the PNG drawn from that CSV's rows."""

from __future__ import annotations

import csv
import io
from typing import BinaryIO

from driftbench.errors import ConfigError
from driftbench.evaluation.plots import quiet_matplotlib, render
from driftbench.pages.render import DataFile, Picture
from driftbench.reproduce.forest import CAPTION, Forest, ForestRow, forest_figure

IMAGES = "docs/images"
FOREST_COLUMNS = ("claim", "verdict", "bound", "low", "mean", "high")


def forest_csv(forest: Forest) -> str:
    """The plotted rows as CSV: each claim's label, verdict and bound, and its effect's interval over the paper's."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(FOREST_COLUMNS)
    for row in forest.rows:
        writer.writerow([row.claim, row.verdict, row.bound, *(f"{v:.6g}" for v in (row.low, row.mean, row.high))])
    return buffer.getvalue()


def read_forest(name: str, title: str, text: str) -> Forest:
    """The forest whose rows ``forest_csv`` wrote as ``text``; other columns are a ConfigError naming the file."""
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != FOREST_COLUMNS:
        raise ConfigError(f"{IMAGES}/{name}.csv: columns {reader.fieldnames}: expected {list(FOREST_COLUMNS)}")
    rows = tuple(
        ForestRow(r["claim"], r["verdict"], r["bound"], float(r["low"]), float(r["mean"]), float(r["high"])) for r in reader
    )
    return Forest(name, title, rows)


def forest_files(forest: Forest) -> tuple[DataFile, Picture]:
    """The forest's data file and its picture, drawn from the data file's rows (what ``render --check`` compares)."""
    data = DataFile(f"{IMAGES}/{forest.name}.csv", forest_csv(forest))

    def draw(fh: BinaryIO) -> None:
        drawn = read_forest(forest.name, forest.title, data.text)
        with quiet_matplotlib():
            fh.write(render(forest.name, CAPTION, forest_figure(drawn)).png)

    return data, Picture(f"{IMAGES}/{forest.name}.png", draw)


def image_link(forest: Forest) -> str:
    """The Markdown image of a forest plot from docs/, its paper in the alt text."""
    return f"![{forest.title}: each claim's effect over the paper's](images/{forest.name}.png)"
