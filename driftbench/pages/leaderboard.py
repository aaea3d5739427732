"""docs/sweeps.md's leaderboard on the embedded defaults, rendered from the drift matrix's archive (results/matrix).

Its blocks: where the runs come from, the leaderboard's table (a subset of leaderboard.md's full
table's columns, every trace in one table) and per trace what it says: the first method, the
oracle, and the methods above, level with (their interval contains no difference) and below
FedAvg. Until the archive exists, each block says so and gives the command that makes it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from driftbench.evaluation.leaderboard.aggregate import trace_rows
from driftbench.evaluation.leaderboard.write import HEADERS, display_rows, markdown_table
from driftbench.evaluation.matrix.cells import read_matrix
from driftbench.evaluation.matrix.text import runs_text
from driftbench.pages.matrix import ARCHIVE, not_yet
from driftbench.pages.render import Block, Rendered
from driftbench.record.archive import is_archive
from driftbench.record.summarize import REFERENCE

PAGE = "docs/sweeps.md"
COLUMNS = (  # leaderboard.md's columns the page shows (HEADERS keys); the drop, recovery, overhead and event columns stay there
    "rank",
    "method",
    "seeds",
    "final_accuracy_mean",
    "vs_reference",
    "tta_speedup",
    "tta_reached",
    "mean_accuracy",
    "worst_interval_accuracy",
    "post_drift_accuracy",
    "ari_mean",
    "degenerate",
)
BLOCKS = ("leaderboard-source", "leaderboard-table", "leaderboard-says")


def leaderboard_page(root: Path) -> list[Rendered]:
    """docs/sweeps.md's leaderboard blocks, rendered from ``root``'s results/matrix."""
    archive = root / ARCHIVE
    if not is_archive(archive):
        return [Block(PAGE, name, not_yet()) for name in BLOCKS]
    rows = trace_rows(archive)
    command = f"`driftbench leaderboard {ARCHIVE} --out leaderboard` writes every column."
    source = f"{runs_text(read_matrix(archive), ARCHIVE)} {command}\n"
    lines = [says(str(trace), group) for trace, group in rows.groupby("trace", sort=False)]
    return [
        Block(PAGE, "leaderboard-source", source),
        Block(PAGE, "leaderboard-table", markdown_table(table_rows(rows)) + "\n"),
        Block(PAGE, "leaderboard-says", "\n".join(lines) + "\n"),
    ]


def table_rows(rows: pd.DataFrame) -> list[dict[str, str]]:
    """The page's table: the trace, then leaderboard.md's columns of ``COLUMNS``."""
    shown = [HEADERS[column] for column in COLUMNS]
    return [{"trace": trace, **{h: cells[h] for h in shown}} for trace, cells in zip(rows["trace"], display_rows(rows))]


SIDES = (f"above {REFERENCE}", f"level with {REFERENCE} (≈)", f"below {REFERENCE}")


def says(trace: str, rows: pd.DataFrame) -> str:
    """One trace's line: the first method, the oracle, and who is above, level with and below FedAvg by the paired interval."""
    ranked = rows[rows["rank"].notna()]
    parts = [f"first {ranked['method'].iloc[0]} ({ranked['final_accuracy_mean'].iloc[0]:.3f})"] if len(ranked) else []
    parts += [f"oracle {accuracy:.3f}" for accuracy in rows[rows["oracle"]]["final_accuracy_mean"]]
    compared = ranked[(ranked["method"] != REFERENCE) & ranked["vs_reference"].notna()]
    sides = [side(low, high) for low, high in zip(compared["vs_reference_low"], compared["vs_reference_high"])]
    for name in SIDES:
        methods = [method for method, its in zip(compared["method"], sides) if its == name]
        parts += [f"{name}: {', '.join(methods)}"] if methods else []
    return f"- `{trace}`: " + "; ".join(parts or [f"no complete run of a ranked method or of {REFERENCE}"]) + "."


def side(low: float, high: float) -> str:
    """Where a difference from FedAvg with the interval [low, high] lies: above, level with (containing 0) or below."""
    return SIDES[0] if low > 0 else SIDES[2] if high < 0 else SIDES[1]
