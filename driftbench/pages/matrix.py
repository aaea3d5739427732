"""The drift matrix's page, docs/matrix.md, rendered from the archive results/matrix over the matrix's suite.

Its blocks: the kinds of drift of the suite's traces (from the trace catalog, always), where the
runs come from, the heatmap with the share-of-the-room table, the rankings with their diagrams,
and every cell's numbers; the CSVs and figures go under docs/images/. Until the archive exists,
each block says so and gives the command that makes it.
"""

from __future__ import annotations

from pathlib import Path

from driftbench.evaluation.leaderboard.write import markdown_table
from driftbench.evaluation.matrix.cells import Grid, kinds_of
from driftbench.evaluation.matrix.figures import CD_CAPTION, HEATMAP_CAPTION
from driftbench.evaluation.matrix.report import CELLS_CSV, HEATMAP_PNG, RANKING_CSV, diagram_name, matrix_parts
from driftbench.evaluation.matrix.text import cell_rows, kinds_text, ranking_markdown, room_table, source_text
from driftbench.pages.render import Block, DataFile, Picture, Rendered
from driftbench.record.archive import is_archive
from driftbench.runner import load_suite

ARCHIVE = "results/matrix"
SUITE = "evaluation/suites/matrix.toml"
PAGE = "docs/matrix.md"
IMAGES = "images"  # below docs/, where the page links its figures and data
MAKE = (
    f"driftbench sweep --suite {SUITE} --jobs 2 --device cpu --out runs && driftbench archive runs --out {ARCHIVE}\n"
    "driftbench render matrix leaderboard"
)
NUMBERED = ("matrix-source", "matrix-heatmap", "matrix-ranking", "matrix-cells")  # the blocks that need the archive


def not_yet(archive: str = ARCHIVE) -> str:
    """A block's text while the archive it renders from does not exist: what is missing and the commands that make it."""
    made = f"It is made, and this page with it, by:\n\n```bash\n{MAKE}\n```\n"
    return f"`{archive}` does not exist yet, so nothing is rendered here. {made}"


def matrix_page(root: Path) -> list[Rendered]:
    """docs/matrix.md's blocks, data files and figures, rendered from ``root``'s results/matrix."""
    suite = load_suite(root / SUITE)
    kinds = Block(PAGE, "matrix-kinds", kinds_text(kinds_of(suite.traces)))
    if not is_archive(root / ARCHIVE):
        return [kinds, *(Block(PAGE, name, not_yet()) for name in NUMBERED)]
    parts = matrix_parts(root / ARCHIVE, Grid(tuple(suite.traces), suite.methods, suite.seeds))
    cells = parts.matrix.cells
    heatmap = (
        f"![share of the oracle's room]({IMAGES}/{HEATMAP_PNG})\n\n*{HEATMAP_CAPTION}* "
        f"Data: [{CELLS_CSV}]({IMAGES}/{CELLS_CSV}).\n\n{room_table(cells)}\n"
    )
    ranking = f"{CD_CAPTION} Data: [{RANKING_CSV}]({IMAGES}/{RANKING_CSV}).\n\n" + ranking_markdown(
        parts.rankings, lambda r: f"{IMAGES}/{diagram_name(r.group)}" if r.diagram else None
    )
    images = f"docs/{IMAGES}"
    return [
        kinds,
        Block(PAGE, "matrix-source", source_text(parts.matrix, ARCHIVE) + "\n"),
        Block(PAGE, "matrix-heatmap", heatmap),
        Block(PAGE, "matrix-ranking", ranking),
        Block(PAGE, "matrix-cells", markdown_table(cell_rows(cells)) + "\n"),
        DataFile(f"{images}/{CELLS_CSV}", parts.cells_csv),
        DataFile(f"{images}/{RANKING_CSV}", parts.ranking_csv),
        Picture(f"{images}/{HEATMAP_PNG}", parts.heatmap()),
        *(Picture(f"{images}/{diagram_name(group)}", draw) for group, draw in parts.diagrams().items()),
    ]
